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
SELECT rank, step,
       CAST(sum(end_ns - ts_ns) AS BIGINT) AS window_ns,
       CAST(coalesce(sum(end_ns - ts_ns) FILTER (WHERE comm_active > 0), 0) AS BIGINT) AS comm_ns,
       CAST(coalesce(sum(end_ns - ts_ns) FILTER (WHERE compute_active > 0), 0) AS BIGINT) AS compute_ns,
       CAST(coalesce(sum(end_ns - ts_ns) FILTER (WHERE comm_active > 0 AND compute_active > 0), 0) AS BIGINT) AS overlap_ns,
       CAST(coalesce(sum(end_ns - ts_ns) FILTER (WHERE comm_active > 0 AND compute_active = 0), 0) AS BIGINT) AS exposed_comm_ns,
       100.0 * coalesce(sum(end_ns - ts_ns) FILTER (WHERE comm_active > 0 AND compute_active > 0), 0)
             / nullif(sum(end_ns - ts_ns) FILTER (WHERE comm_active > 0), 0) AS overlap_pct,
       100.0 * coalesce(sum(end_ns - ts_ns) FILTER (WHERE comm_active > 0 AND compute_active = 0), 0)
             / nullif(sum(end_ns - ts_ns), 0) AS exposed_pct_of_window,
       CAST(coalesce(sum(end_ns - ts_ns) FILTER (WHERE comm_active + compute_active + memory_active > 0), 0) AS BIGINT) AS busy_ns,
       CAST(coalesce(sum(end_ns - ts_ns) FILTER (WHERE comm_active + compute_active + memory_active = 0), 0) AS BIGINT) AS idle_ns
FROM comm_segments
GROUP BY rank, scope, step;
