-- _whatif_parts: per rank, the parts of its profiled steps that `tracekit whatif` rescales to another plan:
-- the step windows (step_breakdown) split into compute (compute, memory and starved time: the work the
-- rank does between collectives), exposed transfer and waiting, point-to-point (pipeline) apart from the
-- other collectives; and within compute, the time of GEMMs and of attention. On GPU ranks those are the
-- kernel families of step_breakdown; on CPU-only (Gloo) ranks, whose compute is CPU ops, the innermost
-- matrix-multiply ops (aten::mm, addmm, bmm, baddbmm) and CPU flash-attention ops inside the windows.
-- @stage report
-- @uses step_breakdown, step_windows, events, comm_overlap
-- @column rank: global rank
-- @column steps: profiled steps, count
-- @column window_ns: the steps' windows summed, ns
-- @column compute_ns: compute, memory and starved time summed, ns
-- @column gemm_ns: of it, GEMMs, ns
-- @column attention_ns: of it, attention, ns
-- @column comm_ns: exposed transfer at collectives other than send/recv, ns
-- @column wait_ns: waiting at collectives other than send/recv, ns
-- @column p2p_comm_ns: exposed transfer at send/recv, ns
-- @column p2p_wait_ns: waiting at send/recv (a pipeline's bubble, mostly), ns
-- @column hidden_ns: communication overlapped with compute (comm_overlap.overlap_ns over the profiled steps), ns
WITH b AS (SELECT * FROM step_breakdown WHERE step <> -1),
per AS (
    SELECT rank, count(DISTINCT step) AS steps,
           sum(ns) FILTER (WHERE part IN ('compute', 'memory') OR detail = 'starved') AS compute_ns,
           sum(ns) FILTER (WHERE detail = 'gemm') AS gpu_gemm_ns,
           sum(ns) FILTER (WHERE detail = 'attention') AS gpu_attention_ns,
           sum(ns) FILTER (WHERE part = 'comm' AND collective NOT IN ('send', 'recv', 'sendrecv')) AS comm_ns,
           sum(ns) FILTER (WHERE detail = 'waiting at a collective'
                           AND collective NOT IN ('send', 'recv', 'sendrecv')) AS wait_ns,
           sum(ns) FILTER (WHERE part = 'comm' AND collective IN ('send', 'recv', 'sendrecv')) AS p2p_comm_ns,
           sum(ns) FILTER (WHERE detail = 'waiting at a collective'
                           AND collective IN ('send', 'recv', 'sendrecv')) AS p2p_wait_ns
    FROM b GROUP BY rank),
hid AS (SELECT rank, CAST(sum(overlap_ns) AS BIGINT) AS hidden_ns FROM comm_overlap WHERE step >= 0 GROUP BY rank),
win AS (SELECT rank, sum(window_ns) AS window_ns FROM (SELECT DISTINCT rank, step, timeline_ns AS window_ns FROM b) GROUP BY rank),
ops AS (  -- the matrix-multiply and CPU attention ops of the windows, each with the next one on its thread
    SELECT e.rank, e.name, e.dur_ns, e.ts_ns + e.dur_ns AS end_ns,
           lead(e.ts_ns) OVER (PARTITION BY e.rank, e.tid ORDER BY e.ts_ns, e.dur_ns DESC, e.event_index) AS next_ts
    FROM events e JOIN step_windows w ON w.rank = e.rank AND e.ts_ns >= w.ts_ns AND e.ts_ns < w.end_ns
    WHERE e.cat = 'cpu_op' AND (e.name IN ('aten::mm', 'aten::addmm', 'aten::bmm', 'aten::baddbmm')
                                OR e.name LIKE 'aten::_scaled_dot_product_%attention%')),
cpu AS (  -- the innermost: an op with another inside it (a DTensor op on the global shapes, around the
          -- local op on the shard) is not counted, its own time beyond the inner op is other compute
    SELECT rank,
           sum(dur_ns) FILTER (WHERE name IN ('aten::mm', 'aten::addmm', 'aten::bmm', 'aten::baddbmm')) AS gemm_ns,
           sum(dur_ns) FILTER (WHERE name LIKE 'aten::_scaled_dot_product_%attention%') AS attention_ns
    FROM ops WHERE next_ts IS NULL OR next_ts >= end_ns
    GROUP BY rank)
SELECT p.rank, p.steps, w.window_ns, coalesce(p.compute_ns, 0) AS compute_ns,
       CASE WHEN p.gpu_gemm_ns IS NOT NULL OR p.gpu_attention_ns IS NOT NULL THEN coalesce(p.gpu_gemm_ns, 0)
            ELSE least(coalesce(c.gemm_ns, 0), coalesce(p.compute_ns, 0)) END AS gemm_ns,
       CASE WHEN p.gpu_gemm_ns IS NOT NULL OR p.gpu_attention_ns IS NOT NULL THEN coalesce(p.gpu_attention_ns, 0)
            ELSE coalesce(c.attention_ns, 0) END AS attention_ns,
       coalesce(p.comm_ns, 0) AS comm_ns, coalesce(p.wait_ns, 0) AS wait_ns,
       coalesce(p.p2p_comm_ns, 0) AS p2p_comm_ns, coalesce(p.p2p_wait_ns, 0) AS p2p_wait_ns,
       coalesce(h.hidden_ns, 0) AS hidden_ns
FROM per p JOIN win w USING (rank) LEFT JOIN cpu c USING (rank) LEFT JOIN hid h USING (rank)
ORDER BY p.rank
