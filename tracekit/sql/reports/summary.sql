-- summary: one row per rank: the one-screen answer.
-- @column rank: global rank
-- @column steps: ProfilerSteps in the trace, count
-- @column window_ms: first to last GPU (or Gloo/CPU) interval, ms
-- @column busy_pct: 100 · busy / window: time any kernel (or Gloo op / CPU op on CPU runs) runs, %
-- @column comm_ms: union of communication intervals, ms
-- @column exposed_comm_ms: communication not hidden by compute, ms
-- @column overlap_pct: 100 · overlap / comm, %
-- @column collectives: communication kernels (or Gloo ops), count
-- @column comm_gb: bytes moved as nccl-tests counts them, GB (1e9 bytes); NULL parts are left out
-- @column top_collective: the collective type with the most total time on this rank
SELECT o.rank,
       (SELECT count(*) FROM steps s WHERE s.rank = o.rank) AS steps,
       o.window_ns / 1e6 AS window_ms,
       100.0 * o.busy_ns / nullif(o.window_ns, 0) AS busy_pct,
       o.comm_ns / 1e6 AS comm_ms,
       o.exposed_comm_ns / 1e6 AS exposed_comm_ms,
       o.overlap_pct,
       (SELECT count(*) FROM collectives c WHERE c.rank = o.rank) AS collectives,
       (SELECT sum(bytes) / 1e9 FROM collectives c WHERE c.rank = o.rank) AS comm_gb,
       (SELECT arg_max(collective, t) FROM (SELECT collective, sum(dur_ns) AS t FROM collectives c
                                            WHERE c.rank = o.rank GROUP BY collective)) AS top_collective
FROM comm_overlap o
WHERE o.step IS NULL
ORDER BY o.rank;
