-- exposed: exposed communication split by a dimension ($by: rank, step, collective, group or
-- size_bucket). Concurrent comm kernels share an exposed nanosecond equally.
-- @stage report
-- @summary exposed communication split by rank, step, collective, group or size bucket
-- @param by = collective [rank|step|collective|group|size_bucket]: the dimension to split exposed communication by
-- @uses comm_exposure
-- @column key: the value of the dimension (rank, step, collective, process group or size bucket)
-- @column collectives: collectives in the group, count
-- @column comm_ms: sum of their durations, ms
-- @column exposed_ms: exposed communication attributed to them, ms
-- @column exposed_pct: 100 · exposed / their duration, %
-- @column share_pct: their share of all exposed communication, %
WITH x AS (
    SELECT CASE $by WHEN 'rank' THEN CAST(rank AS VARCHAR) WHEN 'step' THEN CAST(step AS VARCHAR)
                    WHEN 'collective' THEN collective WHEN 'group' THEN group_label
                    WHEN 'size_bucket' THEN size_bucket END AS key,
           CASE $by WHEN 'rank' THEN rank WHEN 'step' THEN step WHEN 'size_bucket' THEN size_bucket_lo END AS sort_key,
           dur_ns, exposed_ns
    FROM comm_exposure)
SELECT coalesce(key, 'unknown') AS key, count(*) AS collectives, sum(dur_ns) / 1e6 AS comm_ms,
       sum(exposed_ns) / 1e6 AS exposed_ms, 100.0 * sum(exposed_ns) / nullif(sum(dur_ns), 0) AS exposed_pct,
       100.0 * sum(exposed_ns) / nullif(sum(sum(exposed_ns)) OVER (), 0) AS share_pct
FROM x
GROUP BY key, sort_key
ORDER BY sort_key NULLS LAST, exposed_ms DESC;
