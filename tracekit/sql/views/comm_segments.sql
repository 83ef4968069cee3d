-- comm_segments: the timeline of each rank cut into elementary segments, with how many comm, compute
-- and memory intervals are active in each. A +1/-1 sweep over interval ends (sum() OVER (ORDER BY ts)),
-- done twice: over the whole trace (scope 'trace', step NULL) and within each step (scope 'step').
-- Zero-length intervals add nothing; nested or concurrent ones are counted, not double-counted.
-- @column rank: global rank
-- @column scope: trace or step
-- @column step: ProfilerStep number for scope step, else NULL
-- @column ts_ns: segment start, ns (trace clock)
-- @column end_ns: segment end, ns
-- @column comm_active: comm intervals active in the segment
-- @column compute_active: compute intervals active in the segment
-- @column memory_active: memory intervals active in the segment
CREATE OR REPLACE VIEW comm_segments AS
WITH src AS (
    SELECT rank, 'trace' AS scope, CAST(NULL AS BIGINT) AS step, kind, ts_ns, end_ns FROM comm_intervals
    UNION ALL
    SELECT rank, 'step', step, kind, ts_ns, end_ns FROM comm_intervals WHERE step IS NOT NULL),
pts AS (
    SELECT rank, scope, step, ts_ns AS t, (kind = 'comm')::INT AS dc, (kind = 'compute')::INT AS dp,
           (kind = 'memory')::INT AS dm FROM src
    UNION ALL
    SELECT rank, scope, step, end_ns, -(kind = 'comm')::INT, -(kind = 'compute')::INT, -(kind = 'memory')::INT
    FROM src),
agg AS (SELECT rank, scope, step, t, sum(dc) AS dc, sum(dp) AS dp, sum(dm) AS dm FROM pts GROUP BY ALL),
run AS (
    SELECT rank, scope, step, t,
           sum(dc) OVER w AS nc, sum(dp) OVER w AS np, sum(dm) OVER w AS nm,
           lead(t) OVER (PARTITION BY rank, scope, step ORDER BY t) AS t_next
    FROM agg
    WINDOW w AS (PARTITION BY rank, scope, step ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW))
SELECT rank, scope, step, t AS ts_ns, t_next AS end_ns, CAST(nc AS BIGINT) AS comm_active,
       CAST(np AS BIGINT) AS compute_active, CAST(nm AS BIGINT) AS memory_active
FROM run WHERE t_next > t;
