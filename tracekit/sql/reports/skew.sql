-- skew: clean collective instances matched across ranks, most skewed first (see the collective_instances
-- view; the instances left out are counted in a note below the table).
-- @stage report
-- @summary clean collective instances matched across ranks: skew, wait, last rank, busbw
-- @param limit = 50: rows to show, most skewed first (0: all)
-- @left_out _left_out
-- @first instance_key, collective, bytes, start_skew_us, transfer_us, last_rank, total_wait_us
-- @uses collective_instances
-- @column instance_key: the collective instance's matching key (collective_instances)
-- @column match_method: comms_id, pg_seq or order
-- @column collective: the collective (collective_instances.collective)
-- @column ranks_present: ranks that ran the instance, count
-- @column missing_ranks: expected ranks − ranks present (NULL when the group size is unknown), count
-- @column mismatch: metadata that disagree across ranks, or NULL
-- @column bytes: message bytes
-- @column start_skew_us: last start − first start, µs
-- @column end_skew_us: last end − first end, µs
-- @column transfer_us: fastest rank's duration, µs
-- @column transfer_busbw_gbps: bus bandwidth (nccl-tests' busbw) over the transfer time (collective_instances.transfer_busbw_gbps), GB/s
-- @column last_rank: the rank that started last
-- @column total_wait_us: waiting of all ranks for the last one, µs
SELECT instance_key, match_method, collective, ranks_present, missing_ranks, mismatch, bytes,
       start_skew_ns / 1e3 AS start_skew_us, end_skew_ns / 1e3 AS end_skew_us, transfer_ns / 1e3 AS transfer_us,
       transfer_busbw_gbps, last_rank, total_wait_ns / 1e3 AS total_wait_us
FROM collective_instances
WHERE status = 'clean'
ORDER BY start_skew_ns DESC, first_start_ns;
