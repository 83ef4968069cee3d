-- comm_segments: the timeline of each rank cut into elementary segments, with how many comm, compute
-- and memory intervals are active in each and which step owns its time. A +1/-1 sweep over interval
-- ends (sum() OVER (ORDER BY ts)) over the whole trace; zero-length intervals add nothing; nested or
-- concurrent ones are counted, not double-counted.
-- Ownership, so that per-step figures add up to the whole trace's: an interval belongs to the step that
-- launched it (comm_intervals.step; -1 outside every step). When intervals of several steps are active
-- at once (comm of step N still running beside compute of step N+1), the time goes to the earliest of
-- them, per kind: comm_step for comm time, compute_step for compute time, busy_step for busy time.
-- @stage fact
-- @uses comm_intervals, step_windows
-- @column rank: global rank
-- @column ts_ns: start of the segment, ns (trace clock)
-- @column end_ns: end of the segment, ns
-- @column comm_active: comm intervals active in the segment
-- @column compute_active: compute intervals active in the segment
-- @column memory_active: memory intervals active in the segment
-- @column comm_step: step owning the segment's comm time: the smallest step of its active comm intervals (-1 outside steps; NULL without comm)
-- @column compute_step: step owning the segment's compute time, the same way (NULL without compute)
-- @column busy_step: step owning the segment's busy time: the smallest step of all its active intervals (NULL when idle)
-- @column window_step: the step whose window (step_windows) holds the segment, -1 outside every window: the sweep is also cut at the windows' edges inside the rank's timeline, so no segment crosses one
CREATE OR REPLACE VIEW comm_segments AS
-- The sweep also carries, per kind, the sum and the sum of squares of the active intervals' steps: where
-- they show that all active intervals of a kind share one step (n·Σs² = (Σs)²), that step is the owner.
-- Only segments where intervals of several steps are active at once (rare) are resolved by a join.
WITH iv AS (SELECT rank, kind, coalesce(step, -1) AS s, ts_ns, end_ns FROM comm_intervals),
span AS (SELECT rank, min(ts_ns) AS lo, max(end_ns) AS hi FROM iv GROUP BY rank),
-- The windows' edges are cut points too: each carries its step + 1 in (+) and out (-), so the running sum
-- of those is the step + 1 of the window holding the instant (windows never overlap; one that ends before
-- it starts, from a step of negative duration, holds nothing and carries 0), 0 outside every
-- window; the points outside the rank's timeline cut nothing (left out below).
pts AS (
    SELECT rank, ts_ns AS t, 1 AS sign, kind, s, 0 AS ds FROM iv
    UNION ALL
    SELECT rank, end_ns, -1, kind, s, 0 FROM iv
    UNION ALL
    SELECT rank, ts_ns, 0, NULL, 0, CASE WHEN end_ns > ts_ns THEN CAST(step AS HUGEINT) + 1 ELSE 0 END
    FROM step_windows
    UNION ALL
    SELECT rank, end_ns, 0, NULL, 0, CASE WHEN end_ns > ts_ns THEN -(CAST(step AS HUGEINT) + 1) ELSE 0 END
    FROM step_windows),
agg AS (
    SELECT rank, t,
           -- the three counts in one (tk_lane: lane 0 comm, 1 compute, 2 memory)
           CAST(sum(sign * CASE kind WHEN 'comm' THEN tk_lane(0) WHEN 'compute' THEN tk_lane(1)
                                     WHEN 'memory' THEN tk_lane(2) ELSE 0 END) AS HUGEINT) AS dn,
           sum(sign * s) FILTER (WHERE kind = 'comm') AS sc, sum(sign * s * s) FILTER (WHERE kind = 'comm') AS qc,
           sum(sign * s) FILTER (WHERE kind = 'compute') AS sp, sum(sign * s * s) FILTER (WHERE kind = 'compute') AS qp,
           coalesce(sum(sign * s), 0) AS sa, coalesce(sum(sign * s * s), 0) AS qa, CAST(sum(ds) AS HUGEINT) AS ds
    FROM pts GROUP BY rank, t),
sums AS (
    SELECT rank, t, lead(t) OVER (PARTITION BY rank ORDER BY t) AS t_next, CAST(sum(dn) OVER w AS HUGEINT) AS n,
           sum(coalesce(sc, 0)) OVER w AS sc, sum(coalesce(qc, 0)) OVER w AS qc,
           sum(coalesce(sp, 0)) OVER w AS sp, sum(coalesce(qp, 0)) OVER w AS qp,
           sum(sa) OVER w AS sa, sum(qa) OVER w AS qa, CAST(sum(ds) OVER w - 1 AS BIGINT) AS window_step
    FROM agg
    WINDOW w AS (PARTITION BY rank ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)),
run AS (
    SELECT sums.* EXCLUDE (n), tk_lane_count(n, 0) AS nc, tk_lane_count(n, 1) AS np, tk_lane_count(n, 2) AS nm
    FROM sums JOIN span ON span.rank = sums.rank
    WHERE sums.t >= span.lo AND sums.t < span.hi),
seg AS (
    SELECT rank, t AS ts_ns, t_next AS end_ns, window_step, CAST(nc AS BIGINT) AS comm_active,
           CAST(np AS BIGINT) AS compute_active, CAST(nm AS BIGINT) AS memory_active,
           CASE WHEN nc > 0 AND qc * nc = sc * sc THEN CAST(sc // nc AS BIGINT) END AS comm_one,
           CASE WHEN np > 0 AND qp * np = sp * sp THEN CAST(sp // np AS BIGINT) END AS compute_one,
           CASE WHEN nc + np + nm > 0 AND qa * (nc + np + nm) = sa * sa THEN CAST(sa // (nc + np + nm) AS BIGINT) END
               AS busy_one,
           (nc > 0 AND qc * nc <> sc * sc) OR (np > 0 AND qp * np <> sp * sp)
               OR (nc + np + nm > 0 AND qa * (nc + np + nm) <> sa * sa) AS mixed
    FROM run WHERE t_next > t),
own AS (  -- segments where several steps are active: the smallest one, by a join
    SELECT s.rank, s.ts_ns,
           min(i.s) FILTER (WHERE i.kind = 'comm') AS comm_step,
           min(i.s) FILTER (WHERE i.kind = 'compute') AS compute_step,
           min(i.s) AS busy_step
    FROM seg s
    JOIN iv i ON i.rank = s.rank AND i.ts_ns <= s.ts_ns AND s.end_ns <= i.end_ns
    WHERE s.mixed
    GROUP BY s.rank, s.ts_ns)
SELECT seg.rank, seg.ts_ns, seg.end_ns, seg.comm_active, seg.compute_active, seg.memory_active,
       seg.window_step,
       CASE WHEN seg.comm_active > 0 THEN coalesce(seg.comm_one, own.comm_step) END AS comm_step,
       CASE WHEN seg.compute_active > 0 THEN coalesce(seg.compute_one, own.compute_step) END AS compute_step,
       CASE WHEN seg.comm_active + seg.compute_active + seg.memory_active > 0
            THEN coalesce(seg.busy_one, own.busy_step) END AS busy_step
FROM seg LEFT JOIN own ON own.rank = seg.rank AND own.ts_ns = seg.ts_ns;
