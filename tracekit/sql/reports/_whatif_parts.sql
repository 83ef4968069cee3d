-- _whatif_parts: per rank, the parts of its profiled steps that `tracekit whatif` rescales to another plan:
-- the step windows (step_breakdown) split into compute (compute, memory and starved time: the work the
-- rank does between collectives), exposed transfer and waiting, point-to-point (pipeline) apart from the
-- other collectives; and within compute, the time of GEMMs and of attention. On GPU ranks those are the
-- kernel families of step_breakdown; on CPU-only (Gloo) ranks, whose compute is CPU ops, the innermost
-- matrix-multiply ops (aten::mm, addmm, bmm, baddbmm) and CPU flash-attention ops inside the windows, and
-- the compute inside the sharding machinery's own records (FSDP's hooks and copies, DTensor's redistributions
-- and dispatch), which whatif carries per collective the machinery issues rather than per element.
-- @stage report
-- @uses step_breakdown, step_windows, events, comm_overlap, comm_intervals, _gloo_collectives
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
-- @column fsdp_ns: CPU-only ranks: compute inside FSDP's own work (its hooks and copies: FSDP::* records, fsdp::* ops, RegisterPostBackwardFunction), ns; 0 elsewhere (a GPU rank's compute is its kernels)
-- @column dtensor_ns: CPU-only ranks: compute inside DTensor's redistributions and conversions (Redistribute, NestedRedistribute, _ToTorchTensor, _FromTorchTensor and their backwards) and, on ranks that record those, its dispatch (an op holding an op of its own name on its thread, outside the inner op), outside FSDP's, ns; 0 elsewhere
-- @column hidden_ns: communication overlapped with compute over the profiled steps, ns: on Gloo ranks, collectives other than send/recv under compute (an isend in flight takes no core); else comm_overlap.overlap_ns
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
gloo_ranks AS (SELECT DISTINCT rank FROM _gloo_collectives),
span AS (SELECT rank, min(ts_ns) AS lo, max(end_ns) AS hi FROM step_windows WHERE step >= 0 GROUP BY rank),
ivs AS (  -- a Gloo rank's compute and its collectives other than send/recv, within its steps
    SELECT i.rank, greatest(i.ts_ns, s.lo) AS t0, least(i.end_ns, s.hi) AS t1, (i.kind = 'comm')::INT AS c
    FROM comm_intervals i JOIN span s USING (rank)
    LEFT JOIN _gloo_collectives g ON i.kind = 'comm' AND g.rank = i.rank AND g.event_index = i.event_index
    WHERE i.rank IN (SELECT rank FROM gloo_ranks)
      AND (i.kind = 'compute' OR (i.kind = 'comm' AND g.comm_kind = 'collective'))),
pts AS (SELECT rank, t0 AS t, c AS dc, 1 - c AS dp FROM ivs WHERE t1 > t0
        UNION ALL SELECT rank, t1, -c, c - 1 FROM ivs WHERE t1 > t0),
sweep AS (SELECT rank, t, lead(t) OVER (PARTITION BY rank ORDER BY t) AS t_next,
                 sum(dc) OVER w AS nc, sum(dp) OVER w AS np
          FROM (SELECT rank, t, sum(dc) AS dc, sum(dp) AS dp FROM pts GROUP BY ALL)
          WINDOW w AS (PARTITION BY rank ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)),
hid AS (  -- Gloo ranks: their collectives (not send/recv) under their compute, whose reduction and polling
          -- take a core of their own (an isend in flight waits for its peer on no core: left out); other
          -- ranks: comm_overlap
    SELECT rank, CAST(coalesce(sum(t_next - t) FILTER (WHERE nc > 0 AND np > 0), 0) AS BIGINT) AS hidden_ns
    FROM sweep GROUP BY rank
    UNION ALL
    SELECT rank, CAST(sum(overlap_ns) AS BIGINT) FROM comm_overlap
    WHERE step >= 0 AND rank NOT IN (SELECT rank FROM gloo_ranks) GROUP BY rank),
mech AS (  -- CPU-only ranks: the records of the sharding machinery's own work, within the steps; each
           -- runs on the rank's CPU between the model's ops, per collective it issues (tracekit.analytic.step)
    SELECT e.rank, greatest(e.ts_ns, s.lo) AS t0, least(e.ts_ns + e.dur_ns, s.hi) AS t1,
           (e.name LIKE 'FSDP::%' OR e.name LIKE 'fsdp::%' OR e.name LIKE 'RegisterPostBackwardFunction%')::INT AS f
    FROM events e JOIN span s USING (rank)
    WHERE e.rank IN (SELECT rank FROM gloo_ranks) AND e.dur_ns > 0
      AND e.ts_ns < s.hi AND e.ts_ns + e.dur_ns > s.lo
      AND (e.name LIKE 'FSDP::%' OR e.name LIKE 'fsdp::%' OR e.name LIKE 'RegisterPostBackwardFunction%'
           OR e.name IN ('Redistribute', 'RedistributeBackward', 'NestedRedistribute', '_ToTorchTensor',
                         '_ToTorchTensorBackward', '_FromTorchTensor', '_FromTorchTensorBackward'))),
nest AS (  -- CPU-only ranks that run DTensor (its redistributions recorded): an op holding an op of its own
           -- name on its thread is DTensor's dispatch, the op on the global tensor around the op on the shard
    SELECT * FROM (
        SELECT e.rank, e.ts_ns, e.ts_ns + e.dur_ns AS end_ns, s.lo, s.hi,
               lead(e.ts_ns) OVER w AS in_ts, lead(e.ts_ns + e.dur_ns) OVER w AS in_end
        FROM events e JOIN span s USING (rank)
        WHERE e.rank IN (SELECT rank FROM mech WHERE f = 0) AND e.cat = 'cpu_op' AND e.dur_ns > 0
          AND e.ts_ns < s.hi AND e.ts_ns + e.dur_ns > s.lo
        WINDOW w AS (PARTITION BY e.rank, e.tid, e.name ORDER BY e.ts_ns, e.dur_ns DESC, e.event_index))
    WHERE in_ts < end_ns AND in_end <= end_ns),
shells AS (  -- the machinery's regions: FSDP's (f = 1), DTensor's redistributions and dispatch (f = 0)
    SELECT rank, t0, t1, f FROM mech
    UNION ALL SELECT rank, greatest(ts_ns, lo), least(in_ts, hi), 0 FROM nest
    UNION ALL SELECT rank, greatest(in_end, lo), least(end_ns, hi), 0 FROM nest),
mpts AS (
    SELECT rank, t0 AS t, f AS df, 1 - f AS dd, 0 AS dc FROM shells WHERE t1 > t0
    UNION ALL SELECT rank, t1, -f, f - 1, 0 FROM shells WHERE t1 > t0
    UNION ALL SELECT rank, t0, 0, 0, 1 FROM ivs WHERE c = 0 AND t1 > t0 AND rank IN (SELECT rank FROM shells)
    UNION ALL SELECT rank, t1, 0, 0, -1 FROM ivs WHERE c = 0 AND t1 > t0 AND rank IN (SELECT rank FROM shells)),
msweep AS (
    SELECT rank, t, lead(t) OVER (PARTITION BY rank ORDER BY t) AS t_next,
           sum(df) OVER w AS nf, sum(dd) OVER w AS nd, sum(dc) OVER w AS nc
    FROM (SELECT rank, t, sum(df) AS df, sum(dd) AS dd, sum(dc) AS dc FROM mpts GROUP BY ALL)
    WINDOW w AS (PARTITION BY rank ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)),
fw AS (  -- compute inside the regions; a thread blocked inside them on a collective another thread carries
         -- (FSDP's pre-backward hook waiting for its all-gather) reads as compute here as in step_breakdown:
         -- tracekit.analytic.calibrate takes the least rank's as the machinery's own, another's excess as
         -- waiting
    SELECT rank,
           CAST(coalesce(sum(t_next - t) FILTER (WHERE nc > 0 AND nf > 0), 0) AS BIGINT) AS fsdp_ns,
           CAST(coalesce(sum(t_next - t) FILTER (WHERE nc > 0 AND nf = 0 AND nd > 0), 0) AS BIGINT) AS dtensor_ns
    FROM msweep GROUP BY rank),
win AS (SELECT rank, sum(window_ns) AS window_ns FROM (SELECT DISTINCT rank, step, timeline_ns AS window_ns FROM b) GROUP BY rank),
ops AS (  -- the matrix-multiply and CPU attention ops of the windows, each with the next one of its kind on
          -- its thread
    SELECT e.rank, e.tid, e.ts_ns, e.dur_ns, e.ts_ns + e.dur_ns AS end_ns, k.kind,
           lead(e.ts_ns) OVER (PARTITION BY e.rank, e.tid, k.kind ORDER BY e.ts_ns, e.dur_ns DESC, e.event_index)
               AS next_ts
    FROM events e JOIN step_windows w ON w.rank = e.rank AND e.ts_ns >= w.ts_ns AND e.ts_ns < w.end_ns,
         LATERAL (SELECT CASE WHEN e.name LIKE 'aten::_scaled_dot_product_%attention%' THEN 'attention'
                              ELSE 'gemm' END AS kind) k
    WHERE e.cat = 'cpu_op' AND (e.name IN ('aten::mm', 'aten::addmm', 'aten::bmm', 'aten::baddbmm')
                                OR e.name LIKE 'aten::_scaled_dot_product_%attention%')),
att AS (SELECT rank, tid, ts_ns, end_ns FROM ops WHERE kind = 'attention'),
cpu AS (  -- the innermost of each kind: an op with another of its kind inside it (a DTensor op on the global
          -- shapes, around the local op on the shard) is not counted, its own time beyond the inner op is
          -- other compute; a GEMM inside an attention op (the math path's bmm) is the attention's
    SELECT o.rank,
           sum(o.dur_ns) FILTER (WHERE o.kind = 'gemm' AND NOT coalesce(a.end_ns >= o.end_ns, false)) AS gemm_ns,
           sum(o.dur_ns) FILTER (WHERE o.kind = 'attention') AS attention_ns
    FROM ops o ASOF LEFT JOIN att a ON a.rank = o.rank AND a.tid = o.tid AND a.ts_ns <= o.ts_ns
    WHERE o.next_ts IS NULL OR o.next_ts >= o.end_ns
    GROUP BY o.rank)
SELECT p.rank, p.steps, w.window_ns, coalesce(p.compute_ns, 0) AS compute_ns,
       CASE WHEN p.gpu_gemm_ns IS NOT NULL OR p.gpu_attention_ns IS NOT NULL THEN coalesce(p.gpu_gemm_ns, 0)
            ELSE least(coalesce(c.gemm_ns, 0), coalesce(p.compute_ns, 0)) END AS gemm_ns,
       CASE WHEN p.gpu_gemm_ns IS NOT NULL OR p.gpu_attention_ns IS NOT NULL THEN coalesce(p.gpu_attention_ns, 0)
            ELSE coalesce(c.attention_ns, 0) END AS attention_ns,
       coalesce(p.comm_ns, 0) AS comm_ns, coalesce(p.wait_ns, 0) AS wait_ns,
       coalesce(p.p2p_comm_ns, 0) AS p2p_comm_ns, coalesce(p.p2p_wait_ns, 0) AS p2p_wait_ns,
       coalesce(f.fsdp_ns, 0) AS fsdp_ns, coalesce(f.dtensor_ns, 0) AS dtensor_ns,
       coalesce(h.hidden_ns, 0) AS hidden_ns
FROM per p JOIN win w USING (rank) LEFT JOIN cpu c USING (rank) LEFT JOIN hid h USING (rank)
LEFT JOIN fw f USING (rank)
ORDER BY p.rank
