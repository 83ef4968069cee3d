-- comm_intervals: the busy intervals that the overlap algebra works on, one row each, tagged with
-- their kind and step. GPU ranks: comm kernels (kind comm), every other kernel (compute), memcpy and
-- memset (memory); each belongs to the step of the CPU call that launched it. CPU-only ranks (Gloo):
-- gloo:* ops are comm; cpu_op time outside communication ops (and ProfilerStep spans) is compute, the
-- ops under a gloo:send/recv record included (it spans an isend until its thread waits for it, on the
-- thread that goes on computing meanwhile).
-- @stage fact
-- @uses steps, gpu_kernels, _gloo_collectives
-- @column rank: global rank
-- @column step: ProfilerStep number (NULL outside steps)
-- @column kind: the row's kind: comm, compute or memory
-- @column ts_ns: start, ns (trace clock)
-- @column end_ns: end, ns
-- @column event_index: index of the event (the kernel or op) in its trace's traceEvents
CREATE OR REPLACE VIEW comm_intervals AS
WITH cpu_ranks AS (SELECT DISTINCT rank FROM _gloo_collectives),
cpu AS (
    SELECT e.rank, e.tid, e.ts_ns AS ts, e.ts_ns + coalesce(e.dur_ns, 0) AS te,
           (e.name = 'record_param_comms' OR e.name LIKE 'c10d::%' OR e.name LIKE '_c10d_functional::%'
            OR e.name LIKE 'gloo:%' OR e.name LIKE 'nccl:%' OR lower(e.name) LIKE '%wait%') AS is_wait
    FROM events e
    WHERE e.ph = 'X' AND e.rank IN (SELECT rank FROM cpu_ranks) AND coalesce(e.dur_ns, 0) > 0
      AND (e.cat = 'cpu_op' OR e.name LIKE 'gloo:%') AND e.name NOT LIKE 'ProfilerStep#%'
      -- a Gloo send or receive is recorded on the thread that issued it, until that thread waits for it:
      -- the ops the thread runs meanwhile are compute (the transfer hides behind them), not a wait
      AND e.name NOT IN ('gloo:send', 'gloo:recv')),
pts AS (
    SELECT rank, tid, ts AS t, (NOT is_wait)::INT AS dp, is_wait::INT AS dw FROM cpu
    UNION ALL SELECT rank, tid, te, -(NOT is_wait)::INT, -is_wait::INT FROM cpu),
agg AS (SELECT rank, tid, t, sum(dp) AS dp, sum(dw) AS dw FROM pts GROUP BY ALL),
run AS (
    SELECT rank, tid, t, lead(t) OVER (PARTITION BY rank, tid ORDER BY t) AS t_next,
           sum(dp) OVER w AS np, sum(dw) OVER w AS nw
    FROM agg WINDOW w AS (PARTITION BY rank, tid ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)),
cpu_compute AS (SELECT rank, t AS ts_ns, t_next AS end_ns FROM run WHERE np > 0 AND nw = 0 AND t_next > t)
SELECT g.rank, g.step, g.kind, g.ts_ns, g.end_ns, g.event_index
FROM gpu_kernels g
WHERE g.kind IN ('comm', 'compute', 'memory')
UNION ALL
SELECT rank, step, 'comm', ts_ns, end_ns, event_index FROM _gloo_collectives
UNION ALL
SELECT c.rank, CASE WHEN tk_in_span(c.ts_ns, st.ts_ns, st.end_ns) THEN st.step END, 'compute', c.ts_ns, c.end_ns,
       CAST(NULL AS BIGINT)
FROM cpu_compute c
ASOF LEFT JOIN steps st ON st.rank = c.rank AND c.ts_ns >= st.ts_ns;
