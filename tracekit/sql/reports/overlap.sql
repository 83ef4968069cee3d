-- overlap: compute/communication overlap per rank (by = 'trace', step NULL) or per rank and step
-- (by = 'step'). Columns as in the comm_overlap view, in ms.
-- @stage report
-- @most exposed_comm_ms
-- @summary compute/communication overlap per rank (or per rank and step)
-- @param by = trace [trace|step]: trace: one row per rank; step: per rank and step
-- @first rank, step, window_ms, comm_ms, compute_ms, overlap_ms, exposed_comm_ms, overlap_pct
-- @uses comm_overlap
-- @column rank: global rank
-- @column step: ProfilerStep number (NULL for the whole trace)
-- @column window_ms: the time the row covers on the rank's span (from its first interval's start to its last's end): the whole span; a step: its window (step_windows) clipped to the span; step -1: the rest of the span, ms
-- @column comm_ms: length of the union of communication intervals the row owns (comm_overlap.comm_ns), ms
-- @column compute_ms: length of the union of compute intervals the row owns (comm_overlap.compute_ns), ms
-- @column overlap_ms: comm ∩ compute, ms
-- @column exposed_comm_ms: length of comm − compute (communication nothing hides) the row owns, ms
-- @column overlap_pct: 100 · overlap / comm, % (NULL without comm)
-- @column idle_ms: window − union of all intervals, ms
SELECT rank, step, window_ns / 1e6 AS window_ms, comm_ns / 1e6 AS comm_ms, compute_ns / 1e6 AS compute_ms,
       overlap_ns / 1e6 AS overlap_ms, exposed_comm_ns / 1e6 AS exposed_comm_ms, overlap_pct,
       idle_ns / 1e6 AS idle_ms
FROM comm_overlap
WHERE CASE WHEN $by = 'step' THEN step IS NOT NULL ELSE step IS NULL END
ORDER BY rank, step;
