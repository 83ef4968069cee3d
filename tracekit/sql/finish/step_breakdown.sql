-- step_breakdown: where each rank's time goes, step by step, as a partition: every nanosecond of a
-- rank's timeline (from its first interval or step to its last) is in exactly one row's part.
-- Windows (step_windows): step N on a rank runs from the CPU start of its ProfilerStep#N to the CPU
-- start of the rank's next step; the last step ends at the later of its CPU end and the end of the last
-- GPU interval it launched. Time outside every window is step -1. Within a window each instant goes to the first
-- of: compute (a compute kernel runs; shared between the families running then in proportion to their
-- kernels), comm (a comm kernel runs past the time its collective's last rank arrived: the exposed
-- transfer; shared equally between the groups running then), idle 'waiting at a collective' (a comm
-- kernel runs but its clean matched instance's last rank has not arrived: collective_waits.wait_ns),
-- memory (memcpy/memset), idle 'starved' (nothing runs inside a step: the GPU waits for the CPU to
-- launch), idle 'outside steps' (nothing runs, outside every step). Kernel families: tk_kernel_families
-- (tracekit/kernel_families.csv; first pattern wins; no match: other). CPU-only (Gloo) ranks: the
-- compute intervals are CPU ops (family other), the comm ones Gloo ops (comm_intervals).
-- Each row's ns adds its shares in time order (sum(... ORDER BY t)): the same figure, to the last bit,
-- whatever DuckDB's threads and however the ranks are partitioned (a float sum depends on its order).
-- The pieces (_step_pieces) and the sweep over them (_step_segments) are tables of their own: as one
-- query, a heavy rank's step_breakdown ran out of DuckDB's memory (43M events on 8 ranks: over 256 MB).
-- @stage finish
-- @uses _step_segments, _step_pieces
-- @column rank: global rank
-- @column step: ProfilerStep number (-1: outside every step's window)
-- @column part: compute, comm, memory or idle
-- @column detail: compute: gemm, attention, elementwise or other; comm: the process group (comm_exposure.group_label); memory: memcpy/memset; idle: waiting at a collective, starved or outside steps
-- @column collective: comm and waiting: the collective (comm_exposure.collective); NULL for the other parts
-- @column ns: time, ns (fractional where several families or groups share an instant)
-- @column window_ns: the step's window on the rank, ns (the same on every row of a rank and step)
CREATE OR REPLACE VIEW step_breakdown AS
-- the comm and waiting pieces that cover a segment without compute. A range join: done plainly, every
-- such segment meets every comm piece of its rank (quadratic: 0.4 s of CPU for a 270 MB trace's 10k
-- collectives), so both sides also meet in a 1 ms time bucket, as in _collectives' launching stack: a
-- piece is listed under each bucket its span covers, a segment under the bucket of its start, which
-- every piece covering it covers. Same pairs, found by hash. Pieces longer than 64 ms (few) take the
-- plain join.
WITH open_seg AS (
    SELECT rank, t, t1, step, c, len, CASE WHEN c > 0 THEN 'comm' ELSE 'wait' END AS want
    FROM _step_segments WHERE g + a + e + o = 0 AND (c > 0 OR w > 0)),
cover AS (SELECT rank, cls, detail, coll, t0, t1 FROM _step_pieces WHERE cls IN ('comm', 'wait')),
short_cover AS (
    SELECT *, unnest(range(t0 // 1000000, t1 // 1000000 + 1)) AS tb FROM cover WHERE t1 - t0 <= 64000000),
covered AS (
    SELECT s.rank, s.t, s.step, s.c, s.len, p.detail, p.coll
    FROM open_seg s JOIN short_cover p ON p.rank = s.rank AND p.cls = s.want AND p.tb = s.t // 1000000
                                      AND p.t0 <= s.t AND s.t1 <= p.t1
    UNION ALL
    SELECT s.rank, s.t, s.step, s.c, s.len, p.detail, p.coll
    FROM open_seg s JOIN cover p ON p.rank = s.rank AND p.cls = s.want AND p.t0 <= s.t AND s.t1 <= p.t1
    WHERE p.t1 - p.t0 > 64000000),
shared AS (  -- exposed transfer and waiting, shared between the groups whose pieces cover the segment
    SELECT rank, step, t, CASE WHEN c > 0 THEN 'comm' ELSE 'idle' END AS part,
           CASE WHEN c > 0 THEN detail ELSE 'waiting at a collective' END AS detail, coll,
           len / count(*) OVER (PARTITION BY rank, t) AS ns
    FROM covered),
parts AS (
    SELECT rank, step, t, 'compute' AS part, fam.detail, CAST(NULL AS VARCHAR) AS coll, len * fam.n / (g + a + e + o) AS ns
    FROM _step_segments, LATERAL (VALUES ('gemm', g), ('attention', a), ('elementwise', e), ('other', o)) fam(detail, n)
    WHERE g + a + e + o > 0 AND fam.n > 0
    UNION ALL SELECT rank, step, t, part, detail, coll, ns FROM shared
    UNION ALL SELECT rank, step, t, 'memory', 'memcpy/memset', NULL, len FROM _step_segments WHERE g + a + e + o + c + w = 0 AND m > 0
    UNION ALL SELECT rank, step, t, 'idle', CASE WHEN step = -1 THEN 'outside steps' ELSE 'starved' END, NULL, len
    FROM _step_segments WHERE g + a + e + o + c + w + m = 0),
windows AS (SELECT rank, step, sum(len) AS window_ns FROM _step_segments GROUP BY ALL)
SELECT p.rank, p.step, p.part, p.detail, p.coll AS collective, sum(p.ns ORDER BY p.t) AS ns, any_value(w.window_ns) AS window_ns
FROM parts p JOIN windows w ON w.rank = p.rank AND w.step = p.step
GROUP BY p.rank, p.step, p.part, p.detail, p.coll;
