-- breakdown: where each rank's step goes (the step_breakdown view, one row per rank and step with
-- $by = 'step', per rank over its whole timeline with $by = 'rank'). The parts add up to window_ms:
-- compute_ms + comm_ms + memory_ms + wait_ms + starved_ms + outside_ms = window_ms. Step -1 is the
-- time outside every step's window. See step_breakdown for the windows and the order of precedence.
-- @stage report
-- @summary where each step goes: compute by kernel family, exposed comm per group, memory, idle by cause
-- @param by = step [step|rank]: step: one row per rank and step; rank: per rank, whole timeline
-- @first rank, step, window_ms, compute_ms, comm_ms, memory_ms, wait_ms, starved_ms
-- @uses step_breakdown
-- @column rank: global rank
-- @column step: ProfilerStep number; -1 outside every step; NULL with --by rank
-- @column window_ms: the step's window on the rank (with --by rank: the rank's whole timeline), ms
-- @column compute_ms: time a compute kernel runs, ms (= gemm_ms + attention_ms + elementwise_ms + other_ms)
-- @column gemm_ms: compute time of GEMM kernels (tracekit/kernel_families.csv), ms
-- @column attention_ms: compute time of attention kernels, ms
-- @column elementwise_ms: compute time of elementwise kernels, ms
-- @column other_ms: compute time of every other compute kernel (and CPU compute on Gloo ranks), ms
-- @column comm_ms: exposed transfer: a comm kernel runs after its collective's last rank arrived and no compute runs, ms
-- @column comm_by_group: comm_ms per process group, largest first (group ms, ...)
-- @column memory_ms: memcpy/memset and nothing else runs, ms
-- @column wait_ms: idle waiting for another rank at a collective (clean matched instances), no compute running, ms
-- @column starved_ms: idle inside a step: nothing runs on the GPU (it waits for the CPU to launch), ms
-- @column outside_ms: idle outside every step's window, ms
WITH b AS (
    SELECT rank, CASE WHEN $by = 'step' THEN step END AS step, part, detail, sum(ns) AS ns
    FROM step_breakdown GROUP BY ALL),
w AS (
    SELECT rank, CASE WHEN $by = 'step' THEN step END AS step, sum(window_ns) AS window_ns
    FROM (SELECT DISTINCT rank, step, window_ns FROM step_breakdown) GROUP BY ALL),
g AS (
    SELECT rank, step, string_agg(detail || ' ' || printf('%.3f', ns / 1e6), ', ' ORDER BY ns DESC) AS comm_by_group
    FROM b WHERE part = 'comm' GROUP BY ALL)
SELECT w.rank, w.step, w.window_ns / 1e6 AS window_ms,
       coalesce(sum(b.ns) FILTER (WHERE b.part = 'compute'), 0) / 1e6 AS compute_ms,
       coalesce(sum(b.ns) FILTER (WHERE b.detail = 'gemm'), 0) / 1e6 AS gemm_ms,
       coalesce(sum(b.ns) FILTER (WHERE b.detail = 'attention'), 0) / 1e6 AS attention_ms,
       coalesce(sum(b.ns) FILTER (WHERE b.detail = 'elementwise'), 0) / 1e6 AS elementwise_ms,
       coalesce(sum(b.ns) FILTER (WHERE b.part = 'compute' AND b.detail = 'other'), 0) / 1e6 AS other_ms,
       coalesce(sum(b.ns) FILTER (WHERE b.part = 'comm'), 0) / 1e6 AS comm_ms,
       any_value(g.comm_by_group) AS comm_by_group,
       coalesce(sum(b.ns) FILTER (WHERE b.part = 'memory'), 0) / 1e6 AS memory_ms,
       coalesce(sum(b.ns) FILTER (WHERE b.detail = 'waiting at a collective'), 0) / 1e6 AS wait_ms,
       coalesce(sum(b.ns) FILTER (WHERE b.detail = 'starved'), 0) / 1e6 AS starved_ms,
       coalesce(sum(b.ns) FILTER (WHERE b.detail = 'outside steps'), 0) / 1e6 AS outside_ms
FROM w JOIN b ON b.rank = w.rank AND b.step IS NOT DISTINCT FROM w.step
LEFT JOIN g ON g.rank = w.rank AND g.step IS NOT DISTINCT FROM w.step
GROUP BY w.rank, w.step, w.window_ns
ORDER BY w.step NULLS FIRST, w.rank;
