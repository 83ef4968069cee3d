-- _advise_cpu_leaves: the leaf CPU ops of each rank's step thread (the thread its ProfilerSteps are on):
-- ops with no op nested inside them, on the aligned clock. The time between them is time that thread
-- ran no op of its own (asleep, blocked in a wait, or in code the profiler does not record): the
-- counterfactual replay (commands/counterfactual.py) splits it from the work. Ops that wait for a
-- collective (wait_tensor, c10d::wait, aten::wait) are left out: their time is waiting, not work. Each
-- ProfilerStep's start and end are rows of no duration, so that the time before a step's first op counts.
-- @stage report
-- @uses steps, events, rank_clocks
-- @column rank: global rank
-- @column ts_ns: the op's start, ns (aligned clock)
-- @column end_ns: the op's end, ns (aligned clock)
WITH st AS (
    SELECT DISTINCT s.rank, e.pid, e.tid
    FROM steps s JOIN events e ON e.rank = s.rank AND e.ph = 'X' AND e.ts_ns = s.ts_ns
                               AND e.name = 'ProfilerStep#' || s.step),
ops AS (
    SELECT e.rank, e.ts_ns, e.ts_ns + e.dur_ns AS end_ns, e.name
    FROM events e JOIN st ON st.rank = e.rank AND st.pid = e.pid AND st.tid = e.tid
    WHERE e.ph = 'X' AND e.dur_ns IS NOT NULL AND NOT starts_with(e.name, 'ProfilerStep#') AND NOT tk_gpu_cat(e.cat)),
nested AS (  -- on one thread ops nest: an op holds another iff the next op (by start) starts before it ends
    SELECT *, lead(ts_ns) OVER (PARTITION BY rank ORDER BY ts_ns, end_ns DESC) AS next_ts FROM ops),
leaves AS (
    SELECT rank, ts_ns, end_ns FROM nested
    WHERE (next_ts IS NULL OR next_ts >= end_ns)
      AND NOT (name ILIKE '%wait_tensor%' OR name ILIKE 'c10d::wait%' OR name = 'aten::wait')
    UNION ALL SELECT rank, ts_ns, ts_ns FROM steps
    UNION ALL SELECT rank, end_ns, end_ns FROM steps)
SELECT l.rank, tk_aligned(l.ts_ns, c.offset_ns, c.drift_ppm, c.ref_ns) AS ts_ns,
       tk_aligned(l.end_ns, c.offset_ns, c.drift_ppm, c.ref_ns) AS end_ns
FROM leaves l JOIN rank_clocks c ON c.rank = l.rank
ORDER BY l.rank, ts_ns, end_ns
