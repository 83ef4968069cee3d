-- overlap: compute/communication overlap per rank (by = 'trace', step NULL) or per rank and step
-- (by = 'step'). Columns as in the comm_overlap view, in ms.
-- @stage report
-- @summary compute/communication overlap per rank (or per rank and step)
-- @param by = trace [trace|step]: trace: one row per rank; step: per rank and step
-- @first rank, step, window_ms, comm_ms, compute_ms, overlap_ms, exposed_comm_ms, overlap_pct
-- @uses comm_overlap
-- @column rank: global rank
-- @column step: ProfilerStep number (NULL for the whole trace)
-- @column window_ms: first to last interval, ms
-- @column comm_ms: union of comm intervals, ms
-- @column compute_ms: union of compute intervals, ms
-- @column overlap_ms: comm ∩ compute, ms
-- @column exposed_comm_ms: comm − compute, ms
-- @column overlap_pct: 100 · overlap / comm, %
-- @column idle_ms: window − union of all intervals, ms
SELECT rank, step, window_ns / 1e6 AS window_ms, comm_ns / 1e6 AS comm_ms, compute_ns / 1e6 AS compute_ms,
       overlap_ns / 1e6 AS overlap_ms, exposed_comm_ns / 1e6 AS exposed_comm_ms, overlap_pct,
       idle_ns / 1e6 AS idle_ms
FROM comm_overlap
WHERE CASE WHEN $by = 'step' THEN step IS NOT NULL ELSE step IS NULL END
ORDER BY rank, step;
