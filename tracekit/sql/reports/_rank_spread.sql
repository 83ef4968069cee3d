-- _rank_spread: the spread over ranks of each number in a table of one row per rank (or per rank and
-- step): what the HTML page shows instead of the rows above 64 ranks, so that its size stays the same
-- whatever the job's size. per_rank is the report's table as the page registers it (tracekit/html_tables.py:
-- rank, step, then the report's numbers as DOUBLE, in the report's units).
-- @stage report
-- @uses per_rank
-- @column column: the report's column
-- @column rows: the rows (ranks, or rank and step) with a value for it, count
-- @column min: its smallest value, in the column's unit
-- @column median: its median: the mean of the two middle values when the count is even (quantile_cont), the column's unit
-- @column p90: its 90th percentile, interpolated linearly between the two nearest rows' values (quantile_cont), the column's unit
-- @column max: its largest value, the column's unit
-- @column max_rank: the rank of the row with the largest value (ties: the lowest rank, then the lowest step)
-- @column max_step: the step of that row (NULL for a table of one row per rank)
WITH long AS (UNPIVOT (SELECT * FROM per_rank) ON COLUMNS(* EXCLUDE (rank, step)) INTO NAME "column" VALUE value)
SELECT "column", count(*) AS "rows", min(value) AS min, quantile_cont(value, 0.5) AS median,
       quantile_cont(value, 0.9) AS p90, max(value) AS max,
       first(rank ORDER BY value DESC, rank, step NULLS FIRST) AS max_rank,
       first(step ORDER BY value DESC, rank, step NULLS FIRST) AS max_step
FROM long GROUP BY "column";
