-- summary: one row per rank: the one-screen answer.
-- @stage report
-- @summary one row per rank: window, busy %, comm, exposed comm, overlap %, top collective
-- @first rank, steps, window_ms, busy_pct, comm_ms, exposed_comm_ms, overlap_pct, top_collective
-- @uses steps, _collectives, comm_overlap
-- @column rank: global rank
-- @column steps: ProfilerSteps in the trace, count
-- @column window_ms: first to last GPU (or Gloo/CPU) interval, ms
-- @column busy_pct: 100 · busy / window: time any kernel (or Gloo op / CPU op on CPU runs) runs, %
-- @column comm_ms: union of communication intervals, ms
-- @column exposed_comm_ms: communication not hidden by compute, ms
-- @column overlap_pct: 100 · overlap / comm, %
-- @column collectives: communication kernels (or Gloo ops), count
-- @column comm_mb: bytes moved as nccl-tests counts them, MB (1e6 bytes: 402 KB shows as 0.402, 40 GB as 40,000.000); NULL parts are left out
-- @column top_collective: the collective type with the most total time on this rank
WITH st AS (SELECT rank, count(*) AS n FROM steps GROUP BY rank),
by_coll AS (SELECT rank, collective, count(*) AS n, sum(bytes) AS b, sum(dur_ns) AS t
            FROM _collectives GROUP BY rank, collective),
c AS (SELECT rank, sum(n) AS n, sum(b) AS b, arg_max(collective, t) AS top FROM by_coll GROUP BY rank)
SELECT o.rank, coalesce(st.n, 0) AS steps,
       o.window_ns / 1e6 AS window_ms,
       100.0 * o.busy_ns / nullif(o.window_ns, 0) AS busy_pct,
       o.comm_ns / 1e6 AS comm_ms,
       o.exposed_comm_ns / 1e6 AS exposed_comm_ms,
       o.overlap_pct,
       CAST(coalesce(c.n, 0) AS BIGINT) AS collectives,
       c.b / 1e6 AS comm_mb,
       c.top AS top_collective
FROM comm_overlap o LEFT JOIN st USING (rank) LEFT JOIN c USING (rank)
WHERE o.step IS NULL
ORDER BY o.rank;
