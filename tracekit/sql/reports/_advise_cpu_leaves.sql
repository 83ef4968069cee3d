-- _advise_cpu_leaves: the CPU ops of each rank's step thread (the thread its ProfilerSteps are on), on
-- the aligned clock, each marked whether it is a leaf (no op nested inside it). Time inside no op is time
-- the thread ran nothing the profiler records (asleep, blocked, unrecorded code); time inside an op but
-- in none of its leaves, while one of the rank's collectives is in flight, is an op blocked on it (FSDP's
-- all-gather waits in its own code). The counterfactual replay (graph/counterfactual.py) splits both
-- from the work. Ops that wait for a collective (wait_tensor, c10d::wait, aten::wait) are left out: their
-- time is waiting, not work. Each ProfilerStep's start and end are leaf rows of no duration, so that the
-- time before a step's first op counts.
-- @stage report
-- @uses steps, events, rank_clocks
-- @column rank: global rank
-- @column ts_ns: the op's start, ns (aligned clock)
-- @column end_ns: the op's end, ns (aligned clock)
-- @column leaf: no op of the thread is nested inside it
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
    SELECT rank, ts_ns, end_ns, next_ts IS NULL OR next_ts >= end_ns AS leaf FROM nested
    WHERE NOT (name ILIKE '%wait_tensor%' OR name ILIKE 'c10d::wait%' OR name = 'aten::wait')
    UNION ALL SELECT rank, ts_ns, ts_ns, true FROM steps
    UNION ALL SELECT rank, end_ns, end_ns, true FROM steps)
SELECT l.rank, tk_aligned(l.ts_ns, c.offset_ns, c.drift_ppm, c.ref_ns) AS ts_ns,
       tk_aligned(l.end_ns, c.offset_ns, c.drift_ppm, c.ref_ns) AS end_ns, l.leaf
FROM leaves l JOIN rank_clocks c ON c.rank = l.rank
ORDER BY l.rank, ts_ns, end_ns
