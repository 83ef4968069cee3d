-- collectives: collective type × message-size bucket over all ranks: the paper's histogram as a table.
-- @column collective: collective type
-- @column size_bucket: message-size bucket (nccl-tests bytes)
-- @column count: collectives (rows of the collectives view, one per rank and kernel), count
-- @column total_bytes: sum of message bytes, bytes
-- @column total_ms: sum of durations, ms
-- @column mean_us: mean duration, µs
-- @column exposed_ms: exposed communication attributed to these collectives, ms
-- @column busbw_p50_gbps: median bus bandwidth, GB/s (decimal)
-- @column busbw_p90_gbps: 90th percentile bus bandwidth, GB/s (decimal)
SELECT c.collective, coalesce(c.size_bucket, 'unknown size') AS size_bucket, count(*) AS count,
       sum(c.bytes) AS total_bytes, sum(c.dur_ns) / 1e6 AS total_ms, avg(c.dur_ns) / 1e3 AS mean_us,
       sum(x.exposed_ns) / 1e6 AS exposed_ms,
       quantile_cont(c.busbw_gbps, 0.5) AS busbw_p50_gbps, quantile_cont(c.busbw_gbps, 0.9) AS busbw_p90_gbps
FROM collectives c JOIN comm_exposure x USING (rank, event_index)
GROUP BY c.collective, c.size_bucket, c.size_bucket_lo
ORDER BY c.collective, c.size_bucket_lo NULLS LAST;
