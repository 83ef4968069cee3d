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
-- @stage finish
-- @uses gpu_kernels, comm_intervals, step_windows, comm_exposure, collective_waits, collective_instances
-- @column rank: global rank
-- @column step: ProfilerStep number (-1: outside every step's window)
-- @column part: compute, comm, memory or idle
-- @column detail: compute: gemm, attention, elementwise or other; comm: the process group (comm_exposure.group_label); memory: memcpy/memset; idle: waiting at a collective, starved or outside steps
-- @column collective: comm and waiting: the collective (comm_exposure.collective); NULL for the other parts
-- @column ns: time, ns (fractional where several families or groups share an instant)
-- @column window_ns: the step's window on the rank, ns (the same on every row of a rank and step)
CREATE OR REPLACE VIEW step_breakdown AS
WITH win AS (SELECT rank, step, ts_ns AS w0, end_ns AS w1 FROM step_windows),
names AS (SELECT DISTINCT name FROM gpu_kernels WHERE kind = 'compute'),
fam AS (
    SELECT n.name, arg_min(f.family, f.rule_order) AS family
    FROM names n JOIN tk_kernel_families f ON n.name ILIKE f.pattern ESCAPE '\'
    GROUP BY n.name),
clean_wait AS (
    SELECT w.rank, w.event_index, w.wait_ns
    FROM collective_waits w JOIN collective_instances i ON i.instance_key = w.instance_key AND i.status = 'clean'
    WHERE w.wait_ns > 0),
iv AS (
    SELECT i.rank, i.kind, i.ts_ns, i.end_ns,
           CASE WHEN i.kind = 'compute' THEN coalesce(f.family, 'other')
                WHEN i.kind = 'comm' THEN coalesce(x.group_label, 'unknown') END AS detail, x.collective AS coll,
           least(i.end_ns, i.ts_ns + coalesce(cw.wait_ns, 0)) AS arrived_ns
    FROM comm_intervals i
    LEFT JOIN gpu_kernels g ON i.kind = 'compute' AND g.rank = i.rank AND g.event_index = i.event_index
    LEFT JOIN fam f ON f.name = g.name
    LEFT JOIN comm_exposure x ON i.kind = 'comm' AND x.rank = i.rank AND x.event_index = i.event_index
    LEFT JOIN clean_wait cw ON i.kind = 'comm' AND cw.rank = i.rank AND cw.event_index = i.event_index
    WHERE i.end_ns > i.ts_ns),
pieces AS (  -- a comm kernel is two pieces: waiting for the last rank, then the transfer
    SELECT rank, CASE WHEN kind = 'compute' THEN 'c_' || detail ELSE kind END AS cls, detail, coll, ts_ns AS t0,
           end_ns AS t1
    FROM iv WHERE kind IN ('compute', 'memory')
    UNION ALL SELECT rank, 'wait', detail, coll, ts_ns, arrived_ns FROM iv WHERE kind = 'comm' AND arrived_ns > ts_ns
    UNION ALL SELECT rank, 'comm', detail, coll, arrived_ns, end_ns FROM iv WHERE kind = 'comm' AND end_ns > arrived_ns),
pts AS (
    SELECT rank, t0 AS t, 1 AS d, cls FROM pieces
    UNION ALL SELECT rank, t1, -1, cls FROM pieces
    UNION ALL SELECT rank, w0, 0, NULL FROM win
    UNION ALL SELECT rank, w1, 0, NULL FROM win),
agg AS (  -- counts of pieces, as BIGINT (sum() gives HUGEINT): lighter rows for the window and the ASOF join
    SELECT rank, t,
           CAST(coalesce(sum(d) FILTER (WHERE cls = 'c_gemm'), 0) AS BIGINT) AS g,
           CAST(coalesce(sum(d) FILTER (WHERE cls = 'c_attention'), 0) AS BIGINT) AS a,
           CAST(coalesce(sum(d) FILTER (WHERE cls = 'c_elementwise'), 0) AS BIGINT) AS e,
           CAST(coalesce(sum(d) FILTER (WHERE cls = 'c_other'), 0) AS BIGINT) AS o,
           CAST(coalesce(sum(d) FILTER (WHERE cls = 'comm'), 0) AS BIGINT) AS c,
           CAST(coalesce(sum(d) FILTER (WHERE cls = 'wait'), 0) AS BIGINT) AS w,
           CAST(coalesce(sum(d) FILTER (WHERE cls = 'memory'), 0) AS BIGINT) AS m
    FROM pts GROUP BY rank, t),
run AS (
    SELECT rank, t, lead(t) OVER (PARTITION BY rank ORDER BY t) AS t1,
           CAST(sum(g) OVER x AS BIGINT) AS g, CAST(sum(a) OVER x AS BIGINT) AS a,
           CAST(sum(e) OVER x AS BIGINT) AS e, CAST(sum(o) OVER x AS BIGINT) AS o,
           CAST(sum(c) OVER x AS BIGINT) AS c, CAST(sum(w) OVER x AS BIGINT) AS w, CAST(sum(m) OVER x AS BIGINT) AS m
    FROM agg WINDOW x AS (PARTITION BY rank ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)),
seg AS (
    SELECT r.*, CAST(r.t1 - r.t AS DOUBLE) AS len,
           CASE WHEN tk_in_span(r.t, wn.w0, wn.w1) THEN wn.step ELSE -1 END AS step
    FROM run r ASOF LEFT JOIN win wn ON wn.rank = r.rank AND r.t >= wn.w0
    WHERE r.t1 > r.t),
-- the comm and waiting pieces that cover a segment without compute. A range join: done plainly, every
-- such segment meets every comm piece of its rank (quadratic: 0.4 s of CPU for a 270 MB trace's 10k
-- collectives), so both sides also meet in a 1 ms time bucket, as in _collectives' launching stack: a
-- piece is listed under each bucket its span covers, a segment under the bucket of its start, which
-- every piece covering it covers. Same pairs, found by hash. Pieces longer than 64 ms (few) take the
-- plain join.
open_seg AS (
    SELECT rank, t, t1, step, c, len, CASE WHEN c > 0 THEN 'comm' ELSE 'wait' END AS want
    FROM seg WHERE g + a + e + o = 0 AND (c > 0 OR w > 0)),
cover AS (SELECT rank, cls, detail, coll, t0, t1 FROM pieces WHERE cls IN ('comm', 'wait')),
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
    SELECT rank, step, CASE WHEN c > 0 THEN 'comm' ELSE 'idle' END AS part,
           CASE WHEN c > 0 THEN detail ELSE 'waiting at a collective' END AS detail, coll,
           len / count(*) OVER (PARTITION BY rank, t) AS ns
    FROM covered),
parts AS (
    SELECT rank, step, 'compute' AS part, fam.detail, CAST(NULL AS VARCHAR) AS coll, len * fam.n / (g + a + e + o) AS ns
    FROM seg, LATERAL (VALUES ('gemm', g), ('attention', a), ('elementwise', e), ('other', o)) fam(detail, n)
    WHERE g + a + e + o > 0 AND fam.n > 0
    UNION ALL SELECT rank, step, part, detail, coll, ns FROM shared
    UNION ALL SELECT rank, step, 'memory', 'memcpy/memset', NULL, len FROM seg WHERE g + a + e + o + c + w = 0 AND m > 0
    UNION ALL SELECT rank, step, 'idle', CASE WHEN step = -1 THEN 'outside steps' ELSE 'starved' END, NULL, len
    FROM seg WHERE g + a + e + o + c + w + m = 0),
windows AS (SELECT rank, step, sum(len) AS window_ns FROM seg GROUP BY ALL)
SELECT p.rank, p.step, p.part, p.detail, p.coll AS collective, sum(p.ns) AS ns, any_value(w.window_ns) AS window_ns
FROM parts p JOIN windows w ON w.rank = p.rank AND w.step = p.step
GROUP BY p.rank, p.step, p.part, p.detail, p.coll;
