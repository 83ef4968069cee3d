-- comm_overlap: compute/communication overlap per rank over the whole trace (step NULL) and per rank
-- and step (step -1: time of intervals launched outside every step). Lengths are of unions: a
-- nanosecond with two comm kernels counts once. A step's figures are the time it owns (see
-- comm_segments: a kernel belongs to the step that launched it, shared time to the earliest step), so
-- for every rank the step rows add up exactly to its whole-trace row in comm_ns, compute_ns,
-- overlap_ns, exposed_comm_ns and busy_ns. Exposed comm of step N: time when a comm kernel of step N
-- runs (and owns the comm time) and no compute kernel of any step runs.
-- Window, busy and idle are by time instead, on a partition: the whole trace's window (first interval
-- start to last interval end) cut by the step windows (step_windows, clipped to it; -1 is the rest), a
-- step's busy time the union of all intervals inside its window, idle the rest of its window. So these
-- add up too: for every rank the step rows' window_ns, busy_ns and idle_ns sum to the whole-trace row's.
-- @stage fact
-- @uses comm_intervals, step_windows, comm_segments
-- @column rank: global rank
-- @column step: ProfilerStep number; -1 outside every step; NULL for the whole trace
-- @column window_ns: the time the row covers on the rank's span (from its first interval's start to its last's end): the whole span; a step: its window (step_windows) clipped to the span; step -1: the rest of the span, ns
-- @column comm_ns: length of the union of communication intervals over all streams the row owns, ns
-- @column compute_ns: length of the union of compute intervals, ns
-- @column overlap_ns: length of comm ∩ compute, ns
-- @column exposed_comm_ns: length of comm − compute (communication nothing hides), ns
-- @column overlap_pct: 100 · overlap / comm, %: 100 · overlap_ns / comm_ns (NULL without comm)
-- @column exposed_pct_of_window: 100 · exposed_comm_ns / window_ns, %
-- @column busy_ns: length of the union of all intervals (comm, compute, memory) inside the window, ns
-- @column idle_ns: window_ns − busy_ns: time inside the window when nothing runs, ns
CREATE OR REPLACE VIEW comm_overlap AS
WITH span AS (SELECT rank, min(ts_ns) AS lo, max(end_ns) AS hi FROM comm_intervals GROUP BY rank),
sw AS (  -- the step windows clipped to the rank's span
    SELECT w.rank, w.step, greatest(least(w.end_ns, span.hi) - greatest(w.ts_ns, span.lo), 0) AS len
    FROM step_windows w JOIN span USING (rank)),
owned AS (  -- every (rank, step) that owns time of some kind, or has a window
    SELECT DISTINCT rank, coalesce(step, -1) AS step FROM comm_intervals
    UNION SELECT rank, step FROM sw WHERE len > 0
    UNION SELECT rank, -1 FROM span WHERE hi - lo > coalesce((SELECT sum(len) FROM sw WHERE sw.rank = span.rank), 0)),
win AS (
    SELECT rank, CAST(NULL AS BIGINT) AS step, hi - lo AS window_ns FROM span
    UNION ALL
    SELECT o.rank, o.step,
           CASE WHEN o.step = -1 THEN span.hi - span.lo - coalesce((SELECT sum(len) FROM sw WHERE sw.rank = o.rank), 0)
                ELSE coalesce((SELECT sum(len) FROM sw WHERE sw.rank = o.rank AND sw.step = o.step), 0) END
    FROM owned o JOIN span USING (rank)),
seg AS (
    SELECT rank, end_ns - ts_ns AS len, comm_active AS c, compute_active AS p, memory_active AS m,
           comm_step, compute_step, window_step
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
    SELECT rank, window_step AS step, sum(len) AS busy_ns
    FROM seg WHERE c + p + m > 0 GROUP BY GROUPING SETS ((rank), (rank, window_step)))
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
