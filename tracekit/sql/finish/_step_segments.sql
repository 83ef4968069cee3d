-- _step_segments: each rank's timeline cut into elementary segments at every end of a piece
-- (_step_pieces) and every edge of a step window (step_windows), with how many pieces of each class are
-- active in it and the step whose window holds it: a +1/-1 sweep (running sums over the points in time
-- order). step_breakdown cuts the segments under comm kernels again where a kernel's collective's last
-- rank arrived, and shares each one's time out. A table of its own (see _step_pieces): the segments are
-- read five times by step_breakdown, and as a part of its query DuckDB held them beside its other
-- operators.
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
-- @column k: comm kernels (or Gloo ops) active, count
-- @column m: memory (memcpy/memset) pieces active, count
-- @column len: the segment's length, t1 - t, ns (as DOUBLE)
CREATE OR REPLACE VIEW _step_segments AS
WITH win AS (SELECT rank, step, ts_ns AS w0, end_ns AS w1 FROM step_windows),
pts AS (  -- a window's edges carry its step + 1 in (+) and out (-): their running sum is the step + 1 of
          -- the window holding the instant (windows never overlap), 0 outside every window; one that
          -- ends before it starts (a step of negative duration) holds nothing: it cuts, and carries 0
    SELECT rank, t0 AS t, 1 AS d, cls, 0 AS ds FROM _step_pieces
    UNION ALL SELECT rank, t1, -1, cls, 0 FROM _step_pieces
    UNION ALL SELECT rank, w0, 0, NULL, CASE WHEN w1 > w0 THEN CAST(step AS HUGEINT) + 1 ELSE 0 END FROM win
    UNION ALL SELECT rank, w1, 0, NULL, CASE WHEN w1 > w0 THEN -(CAST(step AS HUGEINT) + 1) ELSE 0 END FROM win),
agg AS (  -- the six counts in two running sums (tk_lane, three counts to a sum)
    SELECT rank, t,
           CAST(sum(d * CASE cls WHEN 'c_gemm' THEN tk_lane(0) WHEN 'c_attention' THEN tk_lane(1)
                                 WHEN 'c_elementwise' THEN tk_lane(2) ELSE 0 END) AS HUGEINT) AS gae,
           CAST(sum(d * CASE cls WHEN 'c_other' THEN tk_lane(0) WHEN 'comm' THEN tk_lane(1)
                                 WHEN 'memory' THEN tk_lane(2) ELSE 0 END) AS HUGEINT) AS okm,
           CAST(sum(ds) AS HUGEINT) AS ds
    FROM pts GROUP BY rank, t),
run AS (
    SELECT rank, t, lead(t) OVER (PARTITION BY rank ORDER BY t) AS t1,
           CAST(sum(gae) OVER x AS HUGEINT) AS gae, CAST(sum(okm) OVER x AS HUGEINT) AS okm,
           CAST(sum(ds) OVER x - 1 AS BIGINT) AS step
    FROM agg WINDOW x AS (PARTITION BY rank ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW))
SELECT rank, t, t1, step,
       tk_lane_count(gae, 0) AS g, tk_lane_count(gae, 1) AS a, tk_lane_count(gae, 2) AS e,
       tk_lane_count(okm, 0) AS o, tk_lane_count(okm, 1) AS k, tk_lane_count(okm, 2) AS m,
       CAST(t1 - t AS DOUBLE) AS len
FROM run
WHERE t1 > t;
