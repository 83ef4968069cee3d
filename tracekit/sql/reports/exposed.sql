-- exposed: exposed communication split by a dimension ($by: rank, step, collective, group or
-- size_bucket). Concurrent comm kernels share an exposed nanosecond equally.
-- @stage report
-- @summary exposed communication split by rank, step, collective, group or size bucket
-- @param by = collective [rank|step|collective|group|size_bucket]: the dimension to split exposed communication by
-- @uses comm_exposure
-- @column key: the value of the dimension (rank, step, collective, process group or size bucket); step -1 reads '-1 (outside every step)'
-- @column collectives: communication kernels (or Gloo ops) in the row, count
-- @column kernel_ms: their kernels' (or Gloo ops') durations summed, waiting included, ms
-- @column exposed_ms: exposed communication attributed to the row's collectives (comm_exposure), ms
-- @column exposed_pct: 100 · exposed / their duration, %
-- @column share_pct: their share of all exposed communication, %
WITH x AS (
    SELECT CASE $by WHEN 'rank' THEN CAST(rank AS VARCHAR) WHEN 'step' THEN CASE WHEN step = -1 THEN '-1 (outside every step)' ELSE CAST(step AS VARCHAR) END
                    WHEN 'collective' THEN collective WHEN 'group' THEN group_label
                    WHEN 'size_bucket' THEN size_bucket END AS key,
           CASE $by WHEN 'rank' THEN rank WHEN 'step' THEN step WHEN 'size_bucket' THEN size_bucket_lo END AS sort_key,
           dur_ns, exposed_ns
    FROM comm_exposure)
SELECT coalesce(key, 'unknown') AS key, count(*) AS collectives, sum(dur_ns) / 1e6 AS kernel_ms,
       sum(exposed_ns) / 1e6 AS exposed_ms, 100.0 * sum(exposed_ns) / nullif(sum(dur_ns), 0) AS exposed_pct,
       100.0 * sum(exposed_ns) / nullif(sum(sum(exposed_ns)) OVER (), 0) AS share_pct
FROM x
GROUP BY key, sort_key
ORDER BY sort_key NULLS LAST, exposed_ms DESC;
