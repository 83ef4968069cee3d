-- comm_overlap: compute/communication overlap per rank over the whole trace (step NULL) and per rank
-- and step (step -1: time of intervals launched outside every step). Lengths are of unions: a
-- nanosecond with two comm kernels counts once. A step's figures are the time it owns (see
-- comm_segments: a kernel belongs to the step that launched it, shared time to the earliest step), so
-- for every rank the step rows add up exactly to its whole-trace row in comm_ns, compute_ns,
-- overlap_ns, exposed_comm_ns and busy_ns. Exposed comm of step N: time when a comm kernel of step N
-- runs (and owns the comm time) and no compute kernel of any step runs.
-- @column rank: global rank
-- @column step: ProfilerStep number; -1 outside every step; NULL for the whole trace
-- @column window_ns: from the first start to the last end of the intervals (of the step), ns
-- @column comm_ns: length of the union of comm intervals over all streams, ns
-- @column compute_ns: length of the union of compute intervals, ns
-- @column overlap_ns: length of comm ∩ compute, ns
-- @column exposed_comm_ns: length of comm − compute (communication nothing hides), ns
-- @column overlap_pct: 100 · overlap_ns / comm_ns, % (NULL without comm)
-- @column exposed_pct_of_window: 100 · exposed_comm_ns / window_ns, %
-- @column busy_ns: length of the union of all intervals (comm, compute, memory), ns
-- @column idle_ns: window_ns − busy_ns, ns
CREATE OR REPLACE VIEW comm_overlap AS
WITH win AS (  -- every rank (and rank, step) with intervals gets a row, even if all are zero-length
    SELECT rank, CAST(NULL AS BIGINT) AS step, max(end_ns) - min(ts_ns) AS window_ns
    FROM comm_intervals GROUP BY rank
    UNION ALL
    SELECT rank, coalesce(step, -1), max(end_ns) - min(ts_ns) FROM comm_intervals GROUP BY ALL),
seg AS (
    SELECT rank, end_ns - ts_ns AS len, comm_active AS c, compute_active AS p, memory_active AS m,
           comm_step, compute_step, busy_step
    FROM comm_segments),
comm AS (
    SELECT rank, comm_step AS step, sum(len) AS comm_ns,
           coalesce(sum(len) FILTER (WHERE p > 0), 0) AS overlap_ns,
           coalesce(sum(len) FILTER (WHERE p = 0), 0) AS exposed_comm_ns
    FROM seg WHERE c > 0 GROUP BY GROUPING SETS ((rank), (rank, comm_step))),
compute AS (
    SELECT rank, compute_step AS step, sum(len) AS compute_ns
    FROM seg WHERE p > 0 GROUP BY GROUPING SETS ((rank), (rank, compute_step))),
busy AS (
    SELECT rank, busy_step AS step, sum(len) AS busy_ns
    FROM seg WHERE c + p + m > 0 GROUP BY GROUPING SETS ((rank), (rank, busy_step)))
SELECT w.rank, w.step, CAST(w.window_ns AS BIGINT) AS window_ns,
       CAST(coalesce(comm_ns, 0) AS BIGINT) AS comm_ns, CAST(coalesce(compute_ns, 0) AS BIGINT) AS compute_ns,
       CAST(coalesce(overlap_ns, 0) AS BIGINT) AS overlap_ns,
       CAST(coalesce(exposed_comm_ns, 0) AS BIGINT) AS exposed_comm_ns,
       100.0 * overlap_ns / nullif(comm_ns, 0) AS overlap_pct,
       100.0 * coalesce(exposed_comm_ns, 0) / nullif(w.window_ns, 0) AS exposed_pct_of_window,
       CAST(coalesce(busy_ns, 0) AS BIGINT) AS busy_ns,
       CAST(w.window_ns - coalesce(busy_ns, 0) AS BIGINT) AS idle_ns
FROM win w
LEFT JOIN comm ON comm.rank = w.rank AND comm.step IS NOT DISTINCT FROM w.step
LEFT JOIN compute ON compute.rank = w.rank AND compute.step IS NOT DISTINCT FROM w.step
LEFT JOIN busy ON busy.rank = w.rank AND busy.step IS NOT DISTINCT FROM w.step;
