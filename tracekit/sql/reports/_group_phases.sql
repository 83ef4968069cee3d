-- _group_phases: where each process group's collectives are launched, for inferring a group's role from
-- the trace: per group and collective, how many are launched in the backward pass (inside an op of the
-- autograd engine: autograd::engine::evaluate_function, or an op named ...Backward) and how many outside it
-- (the forward pass, or the optimizer), and the tensor-parallel ops they are launched under, if any
-- (Megatron's _ReduceFromModelParallelRegion, _GatherFromSequenceParallelRegion, ...ParallelRegion,
-- ColumnParallelLinear, RowParallelLinear, LinearWithGradAccumulationAndAsyncCommunication, VocabParallel...;
-- DTensor's Redistribute). GPU collectives only: a kernel's launch call (its correlation id) is on the thread
-- whose ops enclose it; a Gloo op has no launch call.
-- @stage report
-- @uses collectives, events
-- @column pg_name: process group name (NULL when the trace does not say)
-- @column pg_desc: process group description (NULL when the trace does not say)
-- @column group_size: ranks in the group (NULL when unknown), count
-- @column collective: the collective
-- @column n: the group's collectives of that kind with a launch call, count
-- @column backward: of them, launched inside the autograd engine's backward, count
-- @column forward: of them, launched outside it, count
-- @column tp_op: the most frequent tensor-parallel op enclosing their launches (NULL: none)
WITH k AS (
    SELECT c.rank, c.pg_name, nullif(c.pg_desc, '') AS pg_desc, c.group_size, c.collective, e.correlation
    FROM collectives c JOIN events e ON e.rank = c.rank AND e.event_index = c.event_index
    WHERE e.correlation IS NOT NULL AND c.library <> 'gloo'),
call AS (
    SELECT k.*, x.pid, x.tid, x.ts_ns, x.ts_ns + coalesce(x.dur_ns, 0) AS end_ns
    FROM k JOIN events x ON x.rank = k.rank AND x.correlation = k.correlation AND x.ph = 'X' AND NOT tk_gpu_cat(x.cat)),
marks AS (
    SELECT rank, pid, tid, ts_ns, ts_ns + dur_ns AS end_ns, name,
           name ILIKE 'autograd::engine::evaluate_function%' OR name ILIKE '%Backward%' AS bwd
    FROM events
    WHERE ph = 'X' AND dur_ns IS NOT NULL AND NOT tk_gpu_cat(cat)
      AND (name ILIKE 'autograd::engine::evaluate_function%' OR name ILIKE '%Backward%'
           OR name ILIKE '%ParallelRegion%' OR name ILIKE '%ColumnParallelLinear%' OR name ILIKE '%RowParallelLinear%'
           OR name ILIKE '%LinearWithGradAccumulationAndAsyncCommunication%' OR name ILIKE '%VocabParallel%'
           OR name ILIKE 'Redistribute%')),
per AS (
    SELECT c.rank, c.pg_name, c.pg_desc, c.group_size, c.collective, c.correlation,
           coalesce(bool_or(m.bwd), false) AS bwd,
           arg_min(CASE WHEN NOT m.bwd THEN regexp_replace(m.name, 'Backward[0-9]*$', '') END, m.end_ns - m.ts_ns)
               FILTER (WHERE NOT m.bwd) AS tp_op
    FROM call c LEFT JOIN marks m ON m.rank = c.rank AND m.pid = c.pid AND m.tid = c.tid
                                  AND m.ts_ns <= c.ts_ns AND m.end_ns >= c.end_ns
    GROUP BY ALL)
SELECT pg_name, pg_desc, group_size, collective, count(*) AS n, count(*) FILTER (WHERE bwd) AS backward,
       count(*) FILTER (WHERE NOT bwd) AS forward, mode(tp_op) AS tp_op
FROM per GROUP BY ALL
ORDER BY pg_name, pg_desc, group_size, collective
