-- comm_intervals: the busy intervals that the overlap algebra works on, one row each, tagged with
-- their kind and step. GPU ranks: comm kernels (kind comm), every other kernel (compute), memcpy and
-- memset (memory); each belongs to the step of the CPU call that launched it. CPU-only ranks (Gloo):
-- gloo:* ops are comm; cpu_op events on threads that run no Gloo op, other than communication ops
-- and ProfilerStep spans, are compute.
-- @column rank: global rank
-- @column step: ProfilerStep number (NULL outside steps)
-- @column kind: comm, compute or memory
-- @column ts_ns: start, ns (trace clock)
-- @column end_ns: end, ns
-- @column event_index: index of the kernel or op in its trace's traceEvents
CREATE OR REPLACE VIEW comm_intervals AS
WITH cpu_ranks AS (SELECT DISTINCT rank FROM collectives WHERE meta_source = 'gloo op'),
gloo_threads AS (SELECT DISTINCT rank, tid FROM comm_ops WHERE name LIKE 'gloo:%')
SELECT g.rank, st.step, g.kind, g.ts_ns, g.end_ns, g.event_index
FROM gpu_kernels g
LEFT JOIN steps st ON st.rank = g.rank AND coalesce(g.launch_ts_ns, g.ts_ns) BETWEEN st.ts_ns AND st.end_ns
WHERE g.kind IN ('comm', 'compute', 'memory')
UNION ALL
SELECT rank, step, 'comm', ts_ns, end_ns, event_index FROM collectives WHERE meta_source = 'gloo op'
UNION ALL
SELECT e.rank, st.step, 'compute', e.ts_ns, e.ts_ns + coalesce(e.dur_ns, 0), e.event_index
FROM events e
LEFT JOIN steps st ON st.rank = e.rank AND e.ts_ns BETWEEN st.ts_ns AND st.end_ns
WHERE e.ph = 'X' AND e.cat = 'cpu_op' AND e.rank IN (SELECT rank FROM cpu_ranks)
  AND (e.rank, e.tid) NOT IN (SELECT rank, tid FROM gloo_threads)
  AND NOT (e.name = 'record_param_comms' OR e.name LIKE 'c10d::%' OR e.name LIKE 'nccl:%'
           OR e.name LIKE 'gloo:%' OR e.name LIKE 'ProfilerStep#%');
