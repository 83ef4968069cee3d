-- _step_thread_ops: per rank and op name, the time its step thread (the thread of its ProfilerSteps) spent
-- inside ops of that name in its profiled steps (inclusive: an op's nested ops count in it too), per step:
-- what advise reads to say which op a late rank's extra work lies in ('host-bound in OP').
-- @stage report
-- @uses steps, events
-- @column rank: global rank
-- @column name: the op's name
-- @column ms_per_step: inclusive time inside ops of that name, summed over the rank's profiled steps, over their number, ms
WITH st AS (
    SELECT DISTINCT s.rank, e.pid, e.tid
    FROM steps s JOIN events e ON e.rank = s.rank AND e.ph = 'X' AND e.ts_ns = s.ts_ns
                               AND e.name = 'ProfilerStep#' || s.step),
n AS (SELECT rank, greatest(count(DISTINCT step), 1) AS steps FROM steps WHERE step IS NOT NULL GROUP BY rank)
SELECT e.rank, e.name, sum(e.dur_ns) / 1e6 / any_value(n.steps) AS ms_per_step
FROM events e JOIN st ON st.rank = e.rank AND st.pid = e.pid AND st.tid = e.tid
JOIN n ON n.rank = e.rank
JOIN steps s ON s.rank = e.rank AND s.step IS NOT NULL AND e.ts_ns >= s.ts_ns AND e.ts_ns < s.end_ns
WHERE e.ph = 'X' AND e.dur_ns IS NOT NULL AND NOT starts_with(e.name, 'ProfilerStep#') AND NOT tk_gpu_cat(e.cat)
  AND e.cat IN ('cpu_op', 'user_annotation', 'python_function')
GROUP BY e.rank, e.name
