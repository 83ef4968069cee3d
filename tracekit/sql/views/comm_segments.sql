-- comm_segments: the timeline of each rank cut into elementary segments, with how many comm, compute
-- and memory intervals are active in each and which step owns its time. A +1/-1 sweep over interval
-- ends (sum() OVER (ORDER BY ts)) over the whole trace; zero-length intervals add nothing; nested or
-- concurrent ones are counted, not double-counted.
-- Ownership, so that per-step figures add up to the whole trace's: an interval belongs to the step that
-- launched it (comm_intervals.step; -1 outside every step). When intervals of several steps are active
-- at once (comm of step N still running beside compute of step N+1), the time goes to the earliest of
-- them, per kind: comm_step for comm time, compute_step for compute time, busy_step for busy time.
-- @column rank: global rank
-- @column ts_ns: segment start, ns (trace clock)
-- @column end_ns: segment end, ns
-- @column comm_active: comm intervals active in the segment
-- @column compute_active: compute intervals active in the segment
-- @column memory_active: memory intervals active in the segment
-- @column comm_step: step owning the segment's comm time: the smallest step of its active comm intervals (-1 outside steps; NULL without comm)
-- @column compute_step: step owning the segment's compute time, the same way (NULL without compute)
-- @column busy_step: step owning the segment's busy time: the smallest step of all its active intervals (NULL when idle)
CREATE OR REPLACE VIEW comm_segments AS
WITH pts AS (
    SELECT rank, ts_ns AS t, (kind = 'comm')::INT AS dc, (kind = 'compute')::INT AS dp,
           (kind = 'memory')::INT AS dm FROM comm_intervals
    UNION ALL
    SELECT rank, end_ns, -(kind = 'comm')::INT, -(kind = 'compute')::INT, -(kind = 'memory')::INT
    FROM comm_intervals),
agg AS (SELECT rank, t, sum(dc) AS dc, sum(dp) AS dp, sum(dm) AS dm FROM pts GROUP BY ALL),
run AS (
    SELECT rank, t, sum(dc) OVER w AS nc, sum(dp) OVER w AS np, sum(dm) OVER w AS nm,
           lead(t) OVER (PARTITION BY rank ORDER BY t) AS t_next
    FROM agg
    WINDOW w AS (PARTITION BY rank ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)),
seg AS (
    SELECT rank, t AS ts_ns, t_next AS end_ns, CAST(nc AS BIGINT) AS comm_active,
           CAST(np AS BIGINT) AS compute_active, CAST(nm AS BIGINT) AS memory_active
    FROM run WHERE t_next > t),
own AS (
    SELECT s.rank, s.ts_ns,
           min(coalesce(i.step, -1)) FILTER (WHERE i.kind = 'comm') AS comm_step,
           min(coalesce(i.step, -1)) FILTER (WHERE i.kind = 'compute') AS compute_step,
           min(coalesce(i.step, -1)) AS busy_step
    FROM seg s
    JOIN comm_intervals i ON i.rank = s.rank AND i.ts_ns <= s.ts_ns AND s.end_ns <= i.end_ns
    WHERE s.comm_active + s.compute_active + s.memory_active > 0
    GROUP BY s.rank, s.ts_ns)
SELECT seg.rank, seg.ts_ns, seg.end_ns, seg.comm_active, seg.compute_active, seg.memory_active,
       own.comm_step, own.compute_step, own.busy_step
FROM seg LEFT JOIN own ON own.rank = seg.rank AND own.ts_ns = seg.ts_ns;
