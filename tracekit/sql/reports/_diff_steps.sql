-- _diff_steps: run B against run A (tracekit diff A B), per profiled step: the job's step (job_steps), comm
-- and exposed comm averaged over ranks. Steps meet
-- by their position among each run's profiled steps ($steps_by = 'order': A's first with B's first, so
-- that runs profiled at different steps line up) or by their number ('number'); a step only one run has
-- shows nothing for the other.
-- @stage report
-- @uses side_a, side_b
-- @column position: the step's place among the run's profiled steps (1 = first); by number, B's (else A's)
-- @column step_a: ProfilerStep number in A
-- @column step_b: ProfilerStep number in B
-- @column ranks_a: ranks with this step in A, count
-- @column ranks_b: the same in B, count
-- @column step_ms_a: the job's step in A (job_steps: the longest rank's ProfilerStep, its CPU span), ms
-- @column step_ms_b: the same in B, ms
-- @column step_ms_delta: step_ms_b − step_ms_a, ms
-- @column comm_ms_a: communication time in the step in A (union of comm kernels, mean over ranks), ms
-- @column comm_ms_b: the same in B, ms
-- @column exposed_ms_a: exposed communication in the step in A (mean over ranks), ms
-- @column exposed_ms_b: the same in B, ms
-- @column exposed_ms_delta: exposed_ms_b − exposed_ms_a, ms
SELECT coalesce(b.position, a.position) AS position, a.step AS step_a, b.step AS step_b,
       a.ranks AS ranks_a, b.ranks AS ranks_b,
       a.step_ms AS step_ms_a, b.step_ms AS step_ms_b, b.step_ms - a.step_ms AS step_ms_delta,
       a.comm_ms AS comm_ms_a, b.comm_ms AS comm_ms_b,
       a.exposed_ms AS exposed_ms_a, b.exposed_ms AS exposed_ms_b, b.exposed_ms - a.exposed_ms AS exposed_ms_delta
FROM side_a a FULL OUTER JOIN side_b b
  ON CASE WHEN $steps_by = 'number' THEN a.step = b.step ELSE a.position = b.position END
ORDER BY CASE WHEN $steps_by = 'number' THEN coalesce(a.step, b.step) ELSE coalesce(b.position, a.position) END,
         coalesce(a.step, b.step);
