-- comm_overlap: compute/communication overlap per rank over the whole trace (step NULL) and per rank
-- and step. Lengths are of unions: a nanosecond with two comm kernels counts once.
-- @column rank: global rank
-- @column step: ProfilerStep number, NULL for the whole trace
-- @column window_ns: from the first interval's start to the last one's end, ns
-- @column comm_ns: length of the union of comm intervals over all streams, ns
-- @column compute_ns: length of the union of compute intervals, ns
-- @column overlap_ns: length of comm ∩ compute, ns
-- @column exposed_comm_ns: length of comm − compute (communication nothing hides), ns
-- @column overlap_pct: 100 · overlap_ns / comm_ns, % (NULL without comm)
-- @column exposed_pct_of_window: 100 · exposed_comm_ns / window_ns, %
-- @column busy_ns: length of the union of all intervals (comm, compute, memory), ns
-- @column idle_ns: window_ns − busy_ns, ns
CREATE OR REPLACE VIEW comm_overlap AS
WITH parts AS (  -- every rank (and rank, step) with intervals gets a row, even if all are zero-length
    SELECT DISTINCT rank, 'trace' AS scope, CAST(NULL AS BIGINT) AS step FROM comm_intervals
    UNION SELECT DISTINCT rank, 'step', step FROM comm_intervals WHERE step IS NOT NULL),
seg AS (
    SELECT rank, scope, step, end_ns - ts_ns AS len, comm_active AS c, compute_active AS p,
           memory_active AS m
    FROM comm_segments),
agg AS (
    SELECT rank, scope, step, sum(len) AS window_ns,
           coalesce(sum(len) FILTER (WHERE c > 0), 0) AS comm_ns,
           coalesce(sum(len) FILTER (WHERE p > 0), 0) AS compute_ns,
           coalesce(sum(len) FILTER (WHERE c > 0 AND p > 0), 0) AS overlap_ns,
           coalesce(sum(len) FILTER (WHERE c > 0 AND p = 0), 0) AS exposed_comm_ns,
           coalesce(sum(len) FILTER (WHERE c + p + m > 0), 0) AS busy_ns
    FROM seg GROUP BY rank, scope, step)
SELECT parts.rank, parts.step,
       CAST(coalesce(window_ns, 0) AS BIGINT) AS window_ns, CAST(coalesce(comm_ns, 0) AS BIGINT) AS comm_ns,
       CAST(coalesce(compute_ns, 0) AS BIGINT) AS compute_ns, CAST(coalesce(overlap_ns, 0) AS BIGINT) AS overlap_ns,
       CAST(coalesce(exposed_comm_ns, 0) AS BIGINT) AS exposed_comm_ns,
       100.0 * overlap_ns / nullif(comm_ns, 0) AS overlap_pct,
       100.0 * exposed_comm_ns / nullif(window_ns, 0) AS exposed_pct_of_window,
       CAST(coalesce(busy_ns, 0) AS BIGINT) AS busy_ns,
       CAST(coalesce(window_ns - busy_ns, 0) AS BIGINT) AS idle_ns
FROM parts LEFT JOIN agg ON agg.rank = parts.rank AND agg.scope = parts.scope
                        AND agg.step IS NOT DISTINCT FROM parts.step;
