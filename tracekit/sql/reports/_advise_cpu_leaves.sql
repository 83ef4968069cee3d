-- _advise_cpu_leaves: the CPU ops of each rank's step thread (the thread its ProfilerSteps are on), on
-- the aligned clock, each marked whether it is a leaf (no op nested inside it). Time inside no op is time
-- the thread ran nothing the profiler records (asleep, blocked, unrecorded code); time inside an op but
-- in none of its leaves, while one of the rank's collectives is in flight, is an op blocked on it (FSDP's
-- all-gather waits in its own code). The counterfactual replay (graph/counterfactual.py) splits both
-- from the work. Ops that wait for a collective (wait_tensor, c10d::wait, aten::wait) are left out: their
-- time is waiting, not work. So is a range (a user annotation) inside which the rank's autograd thread
-- (runs autograd::engine ops, launched GPU work) starts an op: the step thread waits in it (backward() while the
-- autograd thread runs the backward; bound.sql's rule), and only the ops inside it are rows. Each
-- ProfilerStep's start and end are leaf rows of no duration, so that the time before a step's first op counts.
-- The ops of those other host threads are rows too (their chain says whose): time inside none of them is
-- that thread's host idle.
-- @stage report
-- @uses steps, events, rank_clocks, _step_threads, _autograd_threads, _waited_in_ranges
-- @column rank: global rank
-- @column chain: the thread, as graph_nodes.chain names it (cpu/PID/TID): the step thread's, or another host thread's
-- @column ts_ns: the op's start, ns (aligned clock)
-- @column end_ns: the op's end, ns (aligned clock)
-- @column leaf: no op of the thread is nested inside it
WITH st AS (SELECT * FROM _step_threads),
all_ops AS (
    SELECT e.rank, e.event_index, e.ts_ns, e.ts_ns + e.dur_ns AS end_ns, e.name
    FROM events e JOIN st ON st.rank = e.rank AND st.pid = e.pid AND st.tid = e.tid
    WHERE e.ph = 'X' AND e.dur_ns IS NOT NULL AND NOT starts_with(e.name, 'ProfilerStep#') AND NOT tk_gpu_cat(e.cat)),
other_ops AS (  -- the ops of the rank's autograd thread (_autograd_threads), which the step thread waits for
    SELECT e.rank, e.pid, e.tid, e.ts_ns, e.ts_ns + e.dur_ns AS end_ns, e.name
    FROM events e JOIN _autograd_threads o ON o.rank = e.rank AND o.pid = e.pid AND o.tid = e.tid
    WHERE e.ph = 'X' AND e.dur_ns IS NOT NULL AND NOT tk_gpu_cat(e.cat)),
main AS (SELECT rank, any_value('cpu/' || pid || '/' || tid) AS chain FROM st GROUP BY rank),
ops AS (
    SELECT a.rank, m.chain, a.ts_ns, a.end_ns, a.name
    FROM (SELECT * FROM all_ops ANTI JOIN _waited_in_ranges USING (rank, event_index)) a JOIN main m USING (rank)
    UNION ALL SELECT rank, 'cpu/' || pid || '/' || tid, ts_ns, end_ns, name FROM other_ops),
nested AS (  -- on one thread ops nest: an op holds another iff the next op (by start) starts before it ends
    SELECT *, lead(ts_ns) OVER (PARTITION BY rank, chain ORDER BY ts_ns, end_ns DESC) AS next_ts FROM ops),
leaves AS (
    SELECT rank, chain, ts_ns, end_ns, next_ts IS NULL OR next_ts >= end_ns AS leaf FROM nested
    WHERE NOT (name ILIKE '%wait_tensor%' OR name ILIKE 'c10d::wait%' OR name = 'aten::wait')
    UNION ALL SELECT s.rank, m.chain, s.ts_ns, s.ts_ns, true FROM steps s JOIN main m USING (rank)
    UNION ALL SELECT s.rank, m.chain, s.end_ns, s.end_ns, true FROM steps s JOIN main m USING (rank))
SELECT l.rank, l.chain, tk_aligned(l.ts_ns, c.offset_ns, c.drift_ppm, c.ref_ns) AS ts_ns,
       tk_aligned(l.end_ns, c.offset_ns, c.drift_ppm, c.ref_ns) AS end_ns, l.leaf
FROM leaves l JOIN rank_clocks c ON c.rank = l.rank
ORDER BY l.rank, l.chain, ts_ns, end_ns
