-- breakdown: where each rank's step goes (the step_breakdown view, one row per rank and step with
-- $by = 'step', per rank over its whole timeline with $by = 'rank'): a partition of each row's time by
-- instant, so the parts add up: compute_part_ms + comm_part_ms + memory_part_ms + wait_ms + starved_ms +
-- outside_ms = timeline_ms (a NULL wait_ms counting as 0). A step's row is the time inside its window (a
-- kernel counts where it runs, not by the step that launched it, unlike overlap's): its numbers are named
-- apart from overlap's. Step
-- -1 is the time outside every step's window. See step_breakdown for the windows and the precedence.
-- @stage report
-- @most timeline_ms
-- @summary where each step goes: compute by kernel family, exposed comm per group, memory, idle by cause
-- @param by = step [step|rank]: step: one row per rank and step; rank: per rank, whole timeline
-- @first rank, step, timeline_ms, compute_part_ms, comm_part_ms, memory_part_ms, wait_ms, starved_ms
-- @uses step_breakdown, step_windows, gpu_kernels, _gpu_queued, _rank_waits
-- @column rank: global rank
-- @column step: ProfilerStep number whose window the row covers; -1: the rank's time outside every step's window; NULL with --by rank
-- @column timeline_ms: the time the row covers on the rank's timeline: the step's whole window (step_windows); step -1: the rest of the timeline; with --by rank: the whole timeline, from its first interval or step to its last, ms
-- @column compute_part_ms: the part of timeline_ms when a compute kernel runs (step_breakdown part compute), ms (= gemm_ms + attention_ms + elementwise_ms + other_ms)
-- @column gemm_ms: compute time of GEMM kernels (tracekit/kernel_families.csv), ms
-- @column attention_ms: compute time of attention kernels, ms
-- @column elementwise_ms: compute time of elementwise kernels, ms
-- @column other_ms: compute time of every other compute kernel (and CPU compute on Gloo ranks), ms
-- @column comm_part_ms: the part of timeline_ms when a comm kernel transfers: it runs after its collective's last rank arrived and no compute runs (step_breakdown part comm: exposed transfer), ms
-- @column comm_part_by_group: comm_part_ms per process group, largest first (group ms, ...)
-- @column memory_part_ms: the part of timeline_ms when memcpy/memset and nothing else runs (step_breakdown part memory), ms
-- @column wait_ms: idle waiting for another rank at a collective (clean matched instances), no compute running; NULL where none of the rank's collectives is in a clean instance (as bound's wait_ms: the waiting is then unknown, not none, and inside comm_part_ms: the parts add up with it as 0), ms
-- @column starved_ms: idle inside a step: nothing runs on the GPU (the host has not launched its next op, or the GPU waits on a dependency: starved_queued_ms), ms
-- @column outside_ms: idle outside every step's window, ms
-- @column starved_queued_ms: of starved_ms, the GPU idle whose next op's launch call had returned before the idle began (_gpu_queued): the GPU waits on a dependency (an event, another stream's work), not on the host; NULL on a rank without GPU ops, ms
WITH b AS (
    SELECT rank, CASE WHEN $by = 'step' THEN step END AS step, part, detail, sum(ns) AS ns
    FROM step_breakdown GROUP BY ALL),
w AS (
    SELECT rank, CASE WHEN $by = 'step' THEN step END AS step, sum(timeline_ns) AS timeline_ns
    FROM (SELECT DISTINCT rank, step, timeline_ns FROM step_breakdown) GROUP BY ALL),
-- the queued part of each step's starved time (at most its starved time: both are GPU idle in the window)
q AS (
    SELECT w.rank, w.step, least(sum(least(x.end_ns, w.end_ns) - greatest(x.ts_ns, w.ts_ns)), any_value(s.ns)) AS ns
    FROM step_windows w
    JOIN _gpu_queued x ON x.rank = w.rank AND x.end_ns > w.ts_ns AND x.ts_ns < w.end_ns
    JOIN (SELECT rank, step, sum(ns) AS ns FROM step_breakdown WHERE detail = 'starved' GROUP BY ALL) s
      ON s.rank = w.rank AND s.step = w.step
    WHERE w.end_ns > w.ts_ns
    GROUP BY ALL),
qs AS (SELECT rank, CASE WHEN $by = 'step' THEN step END AS step, sum(ns) AS ns FROM q GROUP BY ALL),
gpu AS (SELECT DISTINCT rank FROM gpu_kernels),
matched AS (SELECT rank, count(*) FILTER (WHERE status = 'clean') AS clean FROM _rank_waits GROUP BY rank),
g AS (
    SELECT rank, step, string_agg(detail || ' ' || printf('%.3f', ns / 1e6), ', ' ORDER BY ns DESC) AS comm_part_by_group
    FROM b WHERE part = 'comm' GROUP BY ALL)
SELECT w.rank, w.step, w.timeline_ns / 1e6 AS timeline_ms,
       coalesce(sum(b.ns) FILTER (WHERE b.part = 'compute'), 0) / 1e6 AS compute_part_ms,
       coalesce(sum(b.ns) FILTER (WHERE b.detail = 'gemm'), 0) / 1e6 AS gemm_ms,
       coalesce(sum(b.ns) FILTER (WHERE b.detail = 'attention'), 0) / 1e6 AS attention_ms,
       coalesce(sum(b.ns) FILTER (WHERE b.detail = 'elementwise'), 0) / 1e6 AS elementwise_ms,
       coalesce(sum(b.ns) FILTER (WHERE b.part = 'compute' AND b.detail = 'other'), 0) / 1e6 AS other_ms,
       coalesce(sum(b.ns) FILTER (WHERE b.part = 'comm'), 0) / 1e6 AS comm_part_ms,
       any_value(g.comm_part_by_group) AS comm_part_by_group,
       coalesce(sum(b.ns) FILTER (WHERE b.part = 'memory'), 0) / 1e6 AS memory_part_ms,
       CASE WHEN any_value(mt.clean) > 0 OR any_value(mt.rank) IS NULL
            THEN coalesce(sum(b.ns) FILTER (WHERE b.detail = 'waiting at a collective'), 0) / 1e6 END AS wait_ms,
       coalesce(sum(b.ns) FILTER (WHERE b.detail = 'starved'), 0) / 1e6 AS starved_ms,
       coalesce(sum(b.ns) FILTER (WHERE b.detail = 'outside steps'), 0) / 1e6 AS outside_ms,
       CASE WHEN any_value(gpu.rank) IS NOT NULL THEN coalesce(any_value(qs.ns), 0) / 1e6 END AS starved_queued_ms
FROM w JOIN b ON b.rank = w.rank AND b.step IS NOT DISTINCT FROM w.step
LEFT JOIN g ON g.rank = w.rank AND g.step IS NOT DISTINCT FROM w.step
LEFT JOIN qs ON qs.rank = w.rank AND qs.step IS NOT DISTINCT FROM w.step
LEFT JOIN gpu ON gpu.rank = w.rank
LEFT JOIN matched mt ON mt.rank = w.rank
GROUP BY w.rank, w.step, w.timeline_ns
ORDER BY w.step NULLS FIRST, w.rank;
