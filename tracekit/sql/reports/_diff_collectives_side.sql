-- _diff_collectives_side: one run's side of `tracekit diff`'s collectives table: per collective x process
-- group x size bucket, the figures compared (see _diff_collectives.sql for the columns).
-- @stage report
-- @uses collectives, comm_exposure
SELECT x.collective, x.group_label AS "group", coalesce(x.size_bucket, 'unknown size') AS size_bucket,
       min(x.size_bucket_lo) AS sort_lo, count(*) AS count, CAST(sum(x.bytes) AS BIGINT) AS bytes,
       sum(x.dur_ns) / 1e6 AS time_ms, sum(x.exposed_ns) / 1e6 AS exposed_ms,
       quantile_cont(c.busbw_gbps, 0.5) AS busbw_gbps
FROM comm_exposure x JOIN collectives c USING (rank, event_index)
GROUP BY x.collective, x.group_label, x.size_bucket;
