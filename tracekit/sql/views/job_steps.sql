-- job_steps: the job's step, one row per profiled step number: the longest of the ranks' ProfilerStep#N
-- spans. The one definition of "the step" of a run that whatif (analytic/measured.py), diff
-- (_diff_steps_side.sql) and advise read (docs/definitions.md, "The job's step"). Each rank's
-- ProfilerSteps tile its timeline, and every rank gets through the same steps in the same time, so a rank's
-- span is one measurement of the job's period; the longest is the rank the step waited for. A pipeline's
-- stages start their step at different times (the stage start offsets): the earliest start to the latest
-- end over ranks adds that offset, which the neighbouring step holds too, and needs the hosts' clocks
-- aligned; a rank's own span needs neither.
-- @stage view
-- @uses steps
-- @column step: ProfilerStep number: N of ProfilerStep#N
-- @column ranks: the ranks concerned: those with a ProfilerStep#N, count
-- @column dur_ns: duration of the job's step: the longest ProfilerStep#N over ranks (steps.dur_ns), ns
-- @column longest_rank: the rank whose ProfilerStep#N is longest (the least such rank on a tie)
CREATE OR REPLACE VIEW job_steps AS
SELECT step, count(*) AS ranks, max(dur_ns) AS dur_ns, arg_min(rank, (-dur_ns, rank)) AS longest_rank
FROM steps
WHERE step IS NOT NULL
GROUP BY step;
