-- _diff_steps_side: one run's side of `tracekit diff`'s steps table: per profiled step, its number, its
-- position among the run's steps (1 = the first profiled step) and the figures compared: the step the
-- job's (job_steps: the longest rank's ProfilerStep), comm and exposed comm averaged over ranks (see
-- _diff_steps.sql for the columns).
-- @stage report
-- @uses job_steps, comm_overlap
SELECT o.step, CAST(row_number() OVER (ORDER BY o.step) AS BIGINT) AS position, count(*) AS ranks,
       any_value(j.dur_ns) / 1e6 AS step_ms, avg(o.comm_ns) / 1e6 AS comm_ms, avg(o.exposed_comm_ns) / 1e6 AS exposed_ms
FROM comm_overlap o LEFT JOIN job_steps j ON j.step = o.step
WHERE o.step IS NOT NULL AND o.step >= 0
GROUP BY o.step;
