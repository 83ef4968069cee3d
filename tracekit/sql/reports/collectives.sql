-- collectives: collective type × message-size bucket over all ranks: the paper's histogram as a table.
-- Two bus bandwidths: busbw on each kernel's own duration (which includes waiting for the slowest rank
-- to arrive) and transfer_busbw on the fastest rank's duration in each clean matched instance (the
-- transfer itself; NULL where no clean instance matched, e.g. a single rank's trace).
-- @stage report
-- @summary collective type x message-size bucket: count, bytes, time, exposed, busbw p50/p90
-- @first collective, size_bucket, count, total_bytes, total_ms, exposed_ms, busbw_p50_gbps
-- @uses collective_waits, collective_instances, collectives, _comm_exposure
-- @column collective: the collective (collectives.collective)
-- @column size_bucket: message-size bucket label (collectives.size_bucket: nccl-tests bytes)
-- @column count: collectives (rows of the collectives view, one per rank and kernel), count
-- @column total_bytes: sum of message bytes, bytes
-- @column total_ms: sum of durations, ms
-- @column mean_us: mean duration, µs
-- @column exposed_ms: exposed communication attributed to the row's collectives (comm_exposure), ms
-- @column busbw_p50_gbps: median bus bandwidth over the kernels' own durations (waiting included), GB/s (decimal)
-- @column busbw_p90_gbps: 90th percentile of the same, GB/s (decimal)
-- @column transfer_busbw_p50_gbps: median bus bandwidth over the transfer time of the clean instances these rows belong to, GB/s (decimal)
-- @column instances: clean collective instances among these rows, count
SELECT c.collective, coalesce(c.size_bucket, 'unknown size') AS size_bucket, count(*) AS count,
       sum(c.bytes) AS total_bytes, sum(c.dur_ns) / 1e6 AS total_ms, avg(c.dur_ns) / 1e3 AS mean_us,
       sum(coalesce(x.exposed_ns, 0.0)) / 1e6 AS exposed_ms,
       quantile_cont(c.busbw_gbps, 0.5) AS busbw_p50_gbps, quantile_cont(c.busbw_gbps, 0.9) AS busbw_p90_gbps,
       quantile_cont(i.transfer_busbw_gbps, 0.5) AS transfer_busbw_p50_gbps, count(DISTINCT i.instance_key) AS instances
FROM collectives c
LEFT JOIN _comm_exposure x USING (rank, event_index)  -- (comm_exposure's own join: that view would build collectives again)
LEFT JOIN collective_waits w USING (rank, event_index)
LEFT JOIN collective_instances i ON i.instance_key = w.instance_key AND i.status = 'clean'
GROUP BY c.collective, c.size_bucket, c.size_bucket_lo
ORDER BY c.collective, c.size_bucket_lo NULLS LAST;
