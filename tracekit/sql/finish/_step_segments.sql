-- _step_segments: each rank's timeline cut into elementary segments at every end of a piece
-- (_step_pieces) and every edge of a step window (step_windows), with how many pieces of each class are
-- active in it and the step whose window holds it: a +1/-1 sweep (running sums over the points in time
-- order). step_breakdown shares each segment's time out. A table of its own (see _step_pieces): the
-- segments are read five times by step_breakdown, and as a part of its query DuckDB held them beside its
-- other operators.
-- @stage finish
-- @uses _step_pieces, step_windows
-- @scratch
-- @column rank: global rank
-- @column t: the segment's start, ns (trace clock)
-- @column t1: the segment's end, ns (after t)
-- @column step: ProfilerStep whose window (step_windows) holds the segment; -1 outside every window
-- @column g: gemm compute pieces active in the segment, count
-- @column a: attention compute pieces active, count
-- @column e: elementwise compute pieces active, count
-- @column o: other compute pieces active, count
-- @column c: comm pieces (transfer after the last rank arrived) active, count
-- @column w: wait pieces (comm kernel before the last rank arrived) active, count
-- @column m: memory (memcpy/memset) pieces active, count
-- @column len: the segment's length, t1 - t, ns (as DOUBLE)
CREATE OR REPLACE VIEW _step_segments AS
WITH win AS (SELECT rank, step, ts_ns AS w0, end_ns AS w1 FROM step_windows),
pts AS (
    SELECT rank, t0 AS t, 1 AS d, cls FROM _step_pieces
    UNION ALL SELECT rank, t1, -1, cls FROM _step_pieces
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
    FROM agg WINDOW x AS (PARTITION BY rank ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW))
SELECT r.rank, r.t, r.t1, CASE WHEN tk_in_span(r.t, wn.w0, wn.w1) THEN wn.step ELSE -1 END AS step,
       r.g, r.a, r.e, r.o, r.c, r.w, r.m, CAST(r.t1 - r.t AS DOUBLE) AS len
FROM run r ASOF LEFT JOIN win wn ON wn.rank = r.rank AND r.t >= wn.w0
WHERE r.t1 > r.t;
