-- _advise_step: the run's profiled steps and ranks, and the step time advise takes its percents of where
-- the run has no job's step (job_steps: no ProfilerStep of any length): the mean rank timeline.
-- @stage report
-- @uses step_breakdown
-- @column step_ms: mean over ranks and steps of the step's timeline (step_breakdown.timeline_ns); without steps, the mean rank timeline, ms
-- @column steps: profiled steps (0 when the traces hold none, as summary counts them), count
-- @column ranks: ranks, count
WITH w AS (SELECT DISTINCT rank, step, timeline_ns FROM step_breakdown)
SELECT coalesce(avg(timeline_ns) FILTER (WHERE step <> -1), sum(timeline_ns) / count(DISTINCT rank)) / 1e6 AS step_ms,
       count(DISTINCT step) FILTER (WHERE step <> -1) AS steps, count(DISTINCT rank) AS ranks
FROM w
