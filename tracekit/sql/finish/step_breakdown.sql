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
-- The sweep knows comm kernels whole; here each segment under comm kernels is cut again at every instant
-- inside it where one of them turns from waiting to transfer, so the segments are those of a sweep over
-- the waits and transfers as pieces of their own: the same cuts, the same shares, the same sums.
-- @stage finish
-- @uses _step_segments, _step_pieces, _collectives, _rank_waits
-- @column rank: global rank
-- @column step: ProfilerStep number (-1: outside every step's window)
-- @column part: compute, comm, memory or idle
-- @column detail: compute: gemm, attention, elementwise or other; comm: the process group (comm_exposure.group_label); memory: memcpy/memset; idle: waiting at a collective, starved or outside steps
-- @column collective: the collective (comm_exposure.collective) of comm and waiting rows; NULL for the other parts
-- @column ns: time, ns (fractional where several families or groups share an instant)
-- @column timeline_ns: the time the row covers on the rank's timeline (the row's step): the step's whole window (step_windows); step -1: the rest of the timeline, ns (the same on every row of a rank and step)
CREATE OR REPLACE VIEW step_breakdown AS
WITH clean_wait AS (SELECT rank, event_index, wait_ns FROM _rank_waits WHERE status = 'clean' AND wait_ns > 0),
-- each comm kernel with its group and collective, and the instant it turns from waiting to transfer: when
-- its clean matched instance's last rank arrived (collective_waits.wait_ns after its start), within it
kern AS (
    SELECT p.rank, p.t0, p.t1, tk_group_label(x.pg_desc, x.pg_ranks, x.pg_name) AS detail, x.collective AS coll,
           least(p.t1, p.t0 + coalesce(cw.wait_ns, 0)) AS arrived
    FROM _step_pieces p
    -- (the kernel's group and collective as _collectives has them: the view collectives adds its size
    -- bucket, link kind and matched group size, none read here, by joins a partition paid for)
    LEFT JOIN _collectives x ON x.rank = p.rank AND x.event_index = p.event_index
    LEFT JOIN clean_wait cw ON cw.rank = p.rank AND cw.event_index = p.event_index
    WHERE p.cls = 'comm'),
ks AS (SELECT * FROM _step_segments WHERE k > 0),
-- the k comm kernels that cover each such segment. A range join: done plainly, every segment meets every
-- comm kernel of its rank (quadratic: 0.4 s of CPU for a 270 MB trace's 10k collectives), so both sides
-- also meet in a 1 ms time bucket, as in _collectives' launching stack: a kernel is listed under each
-- bucket its span covers, a segment under the bucket of its start, which every kernel covering it
-- covers. Same pairs, found by hash. Kernels longer than 64 ms (few) take the plain join.
short_kern AS (SELECT *, unnest(range(t0 // 1000000, t1 // 1000000 + 1)) AS tb FROM kern WHERE t1 - t0 <= 64000000),
cov AS (
    SELECT s.rank, s.t, s.t1 AS s1, p.detail, p.coll, p.arrived
    FROM ks s JOIN short_kern p ON p.rank = s.rank AND p.tb = s.t // 1000000 AND p.t0 <= s.t AND s.t1 <= p.t1
    UNION ALL
    SELECT s.rank, s.t, s.t1, p.detail, p.coll, p.arrived
    FROM ks s JOIN kern p ON p.rank = s.rank AND p.t0 <= s.t AND s.t1 <= p.t1
    WHERE p.t1 - p.t0 > 64000000),
cuts AS (  -- a segment's start and each arrival strictly inside it
    SELECT rank, t, t1 AS s1, t AS u FROM ks
    UNION SELECT rank, t, s1, arrived FROM cov WHERE arrived > t AND arrived < s1),
sub AS (  -- the segments under comm kernels, cut: [u, u1) within the segment that starts at t
    SELECT c.rank, c.t, s.step, c.u, CAST(coalesce(lead(c.u) OVER (PARTITION BY c.rank, c.t ORDER BY c.u), c.s1) - c.u AS DOUBLE) AS len,
           s.g, s.a, s.e, s.o
    FROM cuts c JOIN ks s ON s.rank = c.rank AND s.t = c.t),
-- exposed transfer and waiting, in the cut segments without compute: a kernel covering [u, u1) is in
-- transfer there if its last rank arrived by u, else waiting (no arrival lies inside); transfer is
-- shared equally between the kernels in transfer, waiting (when none is) between the waiting ones
open_cov AS (
    SELECT u.rank, u.step, u.u AS t, u.len, c.detail, c.coll, c.arrived <= u.u AS transfer
    FROM sub u JOIN cov c ON c.rank = u.rank AND c.t = u.t
    WHERE u.g + u.a + u.e + u.o = 0),
shared AS (
    SELECT *, count(*) FILTER (WHERE transfer) OVER (PARTITION BY rank, t) AS nt, count(*) OVER (PARTITION BY rank, t) AS n
    FROM open_cov),
busy AS (  -- the segments with compute: whole where no comm kernel runs, else cut as above
    SELECT rank, step, t, len, g, a, e, o FROM _step_segments WHERE k = 0 AND g + a + e + o > 0
    UNION ALL SELECT rank, step, u, len, g, a, e, o FROM sub WHERE g + a + e + o > 0),
parts AS (
    SELECT rank, step, t, 'compute' AS part, fam.detail, CAST(NULL AS VARCHAR) AS coll, len * fam.n / (g + a + e + o) AS ns
    FROM busy, LATERAL (VALUES ('gemm', g), ('attention', a), ('elementwise', e), ('other', o)) fam(detail, n)
    WHERE fam.n > 0
    UNION ALL SELECT rank, step, t, 'comm', detail, coll, len / nt FROM shared WHERE nt > 0 AND transfer
    UNION ALL SELECT rank, step, t, 'idle', 'waiting at a collective', coll, len / n FROM shared WHERE nt = 0
    UNION ALL SELECT rank, step, t, 'memory', 'memcpy/memset', NULL, len FROM _step_segments WHERE g + a + e + o + k = 0 AND m > 0
    UNION ALL SELECT rank, step, t, 'idle', CASE WHEN step = -1 THEN 'outside steps' ELSE 'starved' END, NULL, len
    FROM _step_segments WHERE g + a + e + o + k + m = 0),
-- the window: the lengths of the segments, cut as above, added in time order (each length is a float: a
-- window past 2^53 ns adds them rounded, the same way whatever the plan)
windows AS (
    SELECT rank, step, sum(len ORDER BY t) AS timeline_ns
    FROM (SELECT rank, step, t, len FROM _step_segments WHERE k = 0 UNION ALL SELECT rank, step, u, len FROM sub)
    GROUP BY ALL)
SELECT p.rank, p.step, p.part, p.detail, p.coll AS collective, sum(p.ns ORDER BY p.t) AS ns, any_value(w.timeline_ns) AS timeline_ns
FROM parts p JOIN windows w ON w.rank = p.rank AND w.step = p.step
GROUP BY p.rank, p.step, p.part, p.detail, p.coll;
