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
-- @column ts_ns: segment start, ns (trace clock)
-- @column end_ns: segment end, ns
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
edges AS (  -- the windows' edges strictly inside the rank's timeline: cut points that change no count
    SELECT DISTINCT w.rank, e.t FROM step_windows w JOIN span ON span.rank = w.rank,
           unnest([w.ts_ns, w.end_ns]) AS e(t)
    WHERE e.t > span.lo AND e.t < span.hi),
pts AS (
    SELECT rank, ts_ns AS t, 1 AS sign, kind, s FROM iv
    UNION ALL
    SELECT rank, end_ns, -1, kind, s FROM iv
    UNION ALL
    SELECT rank, t, 0, NULL, 0 FROM edges),
agg AS (
    SELECT rank, t,
           CAST(sum(sign) FILTER (WHERE kind = 'comm') AS BIGINT) AS dc, sum(sign * s) FILTER (WHERE kind = 'comm') AS sc,
           sum(sign * s * s) FILTER (WHERE kind = 'comm') AS qc,
           CAST(sum(sign) FILTER (WHERE kind = 'compute') AS BIGINT) AS dp, sum(sign * s) FILTER (WHERE kind = 'compute') AS sp,
           sum(sign * s * s) FILTER (WHERE kind = 'compute') AS qp,
           CAST(sum(sign) FILTER (WHERE kind = 'memory') AS BIGINT) AS dm,
           coalesce(sum(sign * s), 0) AS sa, coalesce(sum(sign * s * s), 0) AS qa
    FROM pts GROUP BY rank, t),
run AS (
    SELECT rank, t, lead(t) OVER (PARTITION BY rank ORDER BY t) AS t_next,
           CAST(sum(coalesce(dc, 0)) OVER w AS BIGINT) AS nc, sum(coalesce(sc, 0)) OVER w AS sc, sum(coalesce(qc, 0)) OVER w AS qc,
           CAST(sum(coalesce(dp, 0)) OVER w AS BIGINT) AS np, sum(coalesce(sp, 0)) OVER w AS sp, sum(coalesce(qp, 0)) OVER w AS qp,
           CAST(sum(coalesce(dm, 0)) OVER w AS BIGINT) AS nm, sum(sa) OVER w AS sa, sum(qa) OVER w AS qa
    FROM agg
    WINDOW w AS (PARTITION BY rank ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)),
seg AS (
    SELECT rank, t AS ts_ns, t_next AS end_ns, CAST(nc AS BIGINT) AS comm_active,
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
       CASE WHEN tk_in_span(seg.ts_ns, w.ts_ns, w.end_ns) THEN w.step ELSE -1 END AS window_step,
       CASE WHEN seg.comm_active > 0 THEN coalesce(seg.comm_one, own.comm_step) END AS comm_step,
       CASE WHEN seg.compute_active > 0 THEN coalesce(seg.compute_one, own.compute_step) END AS compute_step,
       CASE WHEN seg.comm_active + seg.compute_active + seg.memory_active > 0
            THEN coalesce(seg.busy_one, own.busy_step) END AS busy_step
FROM seg LEFT JOIN own ON own.rank = seg.rank AND own.ts_ns = seg.ts_ns
ASOF LEFT JOIN (SELECT * FROM step_windows WHERE end_ns > ts_ns) w ON w.rank = seg.rank AND seg.ts_ns >= w.ts_ns;
