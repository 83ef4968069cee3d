-- _step_thread_ops: per rank and op name, the time its step thread (the thread of its ProfilerSteps) spent
-- inside ops of that name in its profiled steps (inclusive: an op's nested ops count in it too), less the
-- time the thread waited inside them (_host_blocked: a synchronize call, a copy that waited for its GPU op, a
-- wait op: an aten::index whose cudaStreamSynchronize waits for an all-to-all held up by another rank is
-- waiting, not work), per step: what advise reads to say which op a late rank's extra work lies in
-- ('host-bound in OP').
-- @stage report
-- @uses steps, events, _step_threads, _host_blocked
-- @column rank: global rank
-- @column name: the op's name
-- @column ms_per_step: time inside ops of that name less the thread's waiting in them, summed over the rank's profiled steps, over their number, ms
WITH st AS (SELECT * FROM _step_threads),
n AS (SELECT rank, greatest(count(DISTINCT step), 1) AS steps FROM steps WHERE step IS NOT NULL GROUP BY rank),
ops AS (
    SELECT e.rank, e.event_index, e.pid, e.tid, e.name, e.ts_ns, e.ts_ns + e.dur_ns AS end_ns, e.dur_ns
    FROM events e JOIN st ON st.rank = e.rank AND st.pid = e.pid AND st.tid = e.tid
    JOIN steps s ON s.rank = e.rank AND s.step IS NOT NULL AND e.ts_ns >= s.ts_ns AND e.ts_ns < s.end_ns
    WHERE e.ph = 'X' AND e.dur_ns IS NOT NULL AND NOT starts_with(e.name, 'ProfilerStep#') AND NOT tk_gpu_cat(e.cat)
      AND e.cat IN ('cpu_op', 'user_annotation', 'python_function')),
blocked AS (  -- each step thread's waiting, as a union (a wait op may hold a synchronize call)
    SELECT rank, pid, tid, min(ts_ns) AS ts_ns, max(end_ns) AS end_ns FROM (
        SELECT *, sum(CASE WHEN before_end IS NULL OR ts_ns > before_end THEN 1 ELSE 0 END)
                      OVER (PARTITION BY rank, pid, tid ORDER BY ts_ns, end_ns DESC) AS island
        FROM (SELECT b.*, max(b.end_ns) OVER (PARTITION BY b.rank, b.pid, b.tid ORDER BY b.ts_ns, b.end_ns DESC
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_end
              FROM _host_blocked b SEMI JOIN st ON st.rank = b.rank AND st.pid = b.pid AND st.tid = b.tid))
    GROUP BY rank, pid, tid, island),
held AS (  -- per op: the thread's waiting within it
    SELECT o.rank, o.event_index, sum(least(b.end_ns, o.end_ns) - greatest(b.ts_ns, o.ts_ns)) AS held_ns
    FROM ops o JOIN blocked b ON b.rank = o.rank AND b.pid = o.pid AND b.tid = o.tid
                             AND b.end_ns > o.ts_ns AND b.ts_ns < o.end_ns
    GROUP BY ALL)
SELECT o.rank, o.name, sum(o.dur_ns - coalesce(h.held_ns, 0)) / 1e6 / any_value(n.steps) AS ms_per_step
FROM ops o JOIN n ON n.rank = o.rank
LEFT JOIN held h ON h.rank = o.rank AND h.event_index = o.event_index
GROUP BY o.rank, o.name
