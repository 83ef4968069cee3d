-- collective_instances: one row per collective instance matched across ranks. Rows of `collectives`
-- are matched by Comms Id when the trace has it, else by (process group, Seq), else by their order
-- within the process group on each rank (GPU: within the stream when no group is known; send/recv:
-- within the peer pair when src/dst ranks are known).
-- @column instance_key: the matching key (id:..., pg:NAME/seq:N, or GROUP/#N for order matching)
-- @column match_method: comms_id, pg_seq or order
-- @column collective: the collective (most common value across ranks)
-- @column ranks_present: ranks that ran this instance, count
-- @column expected_ranks: group size the rows report (NULL when unknown)
-- @column missing_ranks: expected_ranks − ranks_present (NULL when unknown)
-- @column ranks: the ranks present, comma-separated
-- @column mismatch: NULL, or which metadata disagree across ranks (collective, bytes)
-- @column bytes: message bytes (largest reported), bytes
-- @column first_start_ns: earliest start across ranks, ns (trace clock)
-- @column last_start_ns: latest start across ranks, ns
-- @column start_skew_ns: last_start_ns − first_start_ns, ns
-- @column end_skew_ns: latest end − earliest end, ns
-- @column transfer_ns: the fastest rank's duration (the time the transfer itself needs), ns
-- @column busbw_gbps: bus bandwidth over transfer_ns, GB/s (decimal)
-- @column last_rank: the rank that started last (everyone else waited for it)
-- @column total_wait_ns: sum over ranks of (last_start_ns − own start), ns
CREATE OR REPLACE VIEW collective_instances AS
SELECT instance_key, any_value(match_method) AS match_method, mode(collective) AS collective,
       count(DISTINCT rank) AS ranks_present, max(group_size) AS expected_ranks,
       max(group_size) - count(DISTINCT rank) AS missing_ranks,
       string_agg(DISTINCT CAST(rank AS VARCHAR), ',' ORDER BY CAST(rank AS VARCHAR)) AS ranks,
       nullif(concat_ws(', ', CASE WHEN count(DISTINCT collective) > 1 THEN 'collective' END,
                        CASE WHEN count(DISTINCT bytes) > 1 THEN 'bytes' END), '') AS mismatch,
       max(bytes) AS bytes, min(ts_ns) AS first_start_ns, max(ts_ns) AS last_start_ns,
       max(ts_ns) - min(ts_ns) AS start_skew_ns, max(end_ns) - min(end_ns) AS end_skew_ns,
       min(dur_ns) AS transfer_ns,
       CASE WHEN min(dur_ns) > 0 THEN max(bytes) / min(dur_ns) * tk_busbw_factor(mode(collective), max(group_size)) END AS busbw_gbps,
       arg_max(rank, ts_ns) AS last_rank, sum(wait_ns) AS total_wait_ns
FROM collective_waits
GROUP BY instance_key;
