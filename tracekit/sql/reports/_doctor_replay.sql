-- _doctor_replay: doctor's finding on the replay: the steps whose GPU ops waited over 5 % of the step for
-- what the trace does not record (graph_unexplained); no row when there is none. A helper of its own, not a
-- part of doctor.sql's query: it reads the run's events (through the graph), which doctor's query never does
-- (a copy of a run without its events files still has its doctor); tracekit/graph/doctor.py adds it.
-- @stage report
-- @uses graph_unexplained, steps
-- @column check: steps that do not replay
-- @column severity: warning
-- @column ranks: the ranks concerned, comma-separated
-- @column finding: how many rank-steps, and the worst: its rank, step, unexplained and step time, ops, the longest wait and its op
-- @column fix: what to do about it
WITH unreplayed AS (  -- steps whose GPU ops waited over 5 % of the step for what the trace does not record
    SELECT u.rank, u.step, u.ops, u.unexplained_ns, u.worst_ns, u.worst_name, s.dur_ns
    FROM graph_unexplained u JOIN steps s ON s.rank = u.rank AND s.step = u.step
    WHERE u.unexplained_ns > 0.05 * s.dur_ns)
SELECT 'steps that do not replay', 'warning', string_agg(DISTINCT CAST(rank AS VARCHAR), ',' ORDER BY CAST(rank AS VARCHAR)),
           format('in {} the GPU ops waited, beyond their launches and the work before them, for something the trace does '
                  'not record, so a replay of the dependency graph cannot reproduce that time (tracekit report RUN replay, '
                  'unexplained_ms); the most: rank {} step {}, {} ms of its {} ms step in {}, the longest {} ms before {}',
                  tk_plural(count(*), 'rank-step', 'rank-steps'), arg_max(rank, unexplained_ns), arg_max(step, unexplained_ns),
                  round(max(unexplained_ns) / 1e6, 3), round(arg_max(dur_ns, unexplained_ns) / 1e6, 3),
                  tk_plural(arg_max(ops, unexplained_ns), 'op', 'ops'), round(arg_max(worst_ns, unexplained_ns) / 1e6, 3),
                  left(arg_max(worst_name, unexplained_ns), 80)),
           'record the CUDA synchronization events, so that the cross-stream waits are in the trace (torch.profiler.profile('
           'experimental_config=torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True))); otherwise look for '
           'GPU work outside the profile (another process on the GPU, a host callback)'
    FROM unreplayed HAVING count(*) > 0;
