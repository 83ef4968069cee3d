-- collective_instances: one row per collective instance matched across ranks (matching rules: see
-- collective_waits), with its skew, its transfer time and whether it is clean. Only clean instances
-- feed stragglers and the skew report: a partial or mismatched instance would name a false straggler.
-- @stage reduce
-- @uses collective_waits
-- @column instance_key: the collective instance's matching key (id:..., pg:NAME/seq:N, or GROUP/#N for order matching)
-- @column match_method: comms_id, pg_seq or order
-- @column collective: the collective; sendrecv for a send matched with its recv; the smallest name when ranks disagree (see mismatch)
-- @column ranks_present: ranks that ran the instance, count
-- @column expected_ranks: ranks in the instance: 2 for a point-to-point send/recv; else the group size the rows report, else the world size when every rank of the world took part (NULL when unknown)
-- @column missing_ranks: expected ranks − ranks present: expected_ranks − ranks_present (NULL when unknown), count
-- @column ranks: the ranks concerned: those present, comma-separated
-- @column mismatch: metadata that disagree across ranks (collective, bytes; alltoall sizes are not compared), or NULL
-- @column status: clean, single rank, missing ranks, mismatch, unaligned (order matching could not align the group) or before window (a row whose partners fall before another rank's profile starts)
-- @column bytes: message bytes (largest reported), bytes
-- @column first_start_ns: earliest start across ranks, ns (aligned clock: see clock_offsets)
-- @column last_start_ns: latest start across ranks, ns
-- @column start_skew_ns: last_start_ns − first_start_ns, ns
-- @column end_skew_ns: latest end − earliest end, ns
-- @column transfer_ns: the fastest rank's duration (the time the transfer itself needs, without waiting), ns
-- @column transfer_busbw_gbps: bus bandwidth (nccl-tests' busbw) over the transfer time (transfer_ns): bytes / transfer_ns × nccl-tests' factor for expected_ranks, GB/s (decimal); NULL for an uneven all-to-all (nccl-tests' factor assumes even splits: see throughput_gbps)
-- @column last_rank: the rank that started last (everyone else waited for it); ranks tied at the latest start: the lowest rank number (collective_waits.is_last)
-- @column last_tied: ranks that share the latest start, count (1: no tie)
-- @column uneven: all-to-all instances: the ranks send or receive different amounts (their input or output elements differ, or a rank's recorded split sizes differ across peers); NULL for other collectives
-- @column in_imbalance: all-to-all: the largest rank's input elements / the mean over ranks (1: even)
-- @column out_imbalance: all-to-all: the largest rank's output elements / the mean over ranks (1: even)
-- @column exchange_ns: all-to-all: from the last rank's arrival to the last end (max end − max start): the time the exchange took once every rank was there, ns
-- @column throughput_gbps: all-to-all: the bytes all ranks sent together / exchange_ns, GB/s (decimal); the figure for uneven instances, where transfer_busbw_gbps is left out
-- @column total_wait_ns: sum over ranks of (last_start_ns − own start), ns
-- @column hosts: distinct hosts of the ranks present (traces.host), count
-- @column link_kind: the links between the ranks' hosts: intra-node (one host), inter-node (every rank on a host of its own), mixed (several hosts, some with several of its ranks), NULL when a rank's host is unknown
CREATE OR REPLACE VIEW collective_instances AS
WITH world AS (SELECT max(world_size) AS world_size FROM traces),
i AS (
    SELECT instance_key, any_value(match_method) AS match_method,
           CASE WHEN min(collective) = max(collective) THEN min(collective)
                WHEN min(match_collective) = max(match_collective) THEN min(match_collective)
                ELSE min(collective) END AS collective,
           -- (the distinct ranks as a list, counted and written from it: count(DISTINCT) and an ordered
           -- string_agg(DISTINCT) were a third of the rule's time at 4,096 ranks; the same values)
           list_distinct(list(rank)) AS present, bool_and(match_collective = 'sendrecv') AS p2p,
           max(group_size) AS group_size, any_value(world.world_size) AS world_size,
           nullif(concat_ws(', ', CASE WHEN min(match_collective) < max(match_collective) THEN 'collective' END,
                            CASE WHEN min(bytes) < max(bytes) AND bool_and(collective NOT IN ('alltoall', 'alltoallv'))
                                 THEN 'bytes' END), '') AS mismatch,
           any_value(order_status) AS order_status,
           max(bytes) AS bytes, min(ts_ns) AS first_start_ns, max(ts_ns) AS last_start_ns,
           max(ts_ns) - min(ts_ns) AS start_skew_ns, max(end_ns) - min(end_ns) AS end_skew_ns,
           min(dur_ns) AS transfer_ns, min(rank) FILTER (WHERE is_last) AS last_rank,
           coalesce(len(list_distinct(list(rank) FILTER (WHERE starts_last))), 0) AS last_tied, CAST(sum(wait_ns) AS BIGINT) AS total_wait_ns,
           bool_and(collective IN ('alltoall', 'alltoallv')) AS a2a,
           coalesce(min(in_nelems) < max(in_nelems), false) OR coalesce(min(out_nelems) < max(out_nelems), false)
               OR coalesce(bool_or(len(list_distinct(TRY_CAST(in_splits AS BIGINT[]))) > 1), false) AS uneven_,
           max(in_nelems) / avg(in_nelems) AS in_imb, max(out_nelems) / avg(out_nelems) AS out_imb,
           max(end_ns) - max(ts_ns) AS exchange_ns, sum(bytes) AS sent_bytes,
           count(DISTINCT h.host) AS hosts, bool_or(h.host IS NULL) AS host_unknown
    FROM collective_waits LEFT JOIN (SELECT rank, host FROM traces) h USING (rank), world
    GROUP BY instance_key),
i2 AS (
    SELECT *, len(present) AS ranks_present,
           CASE WHEN p2p THEN 2 ELSE coalesce(group_size, CASE WHEN len(present) = world_size THEN world_size END)
           END AS expected_ranks,
           array_to_string(list_sort(list_transform(present, lambda r: CAST(r AS VARCHAR))), ',') AS ranks
    FROM i)
SELECT instance_key, match_method, collective, ranks_present, expected_ranks,
       expected_ranks - ranks_present AS missing_ranks, ranks, mismatch,
       CASE WHEN order_status = 'unaligned' THEN 'unaligned'
            WHEN order_status = 'before window' THEN 'before window'
            WHEN mismatch IS NOT NULL THEN 'mismatch'
            WHEN ranks_present < 2 THEN 'single rank'
            WHEN expected_ranks > ranks_present THEN 'missing ranks'
            ELSE 'clean' END AS status,
       bytes, first_start_ns, last_start_ns, start_skew_ns, end_skew_ns, transfer_ns,
       CASE WHEN transfer_ns > 0 AND NOT (a2a AND uneven_)
            THEN bytes / transfer_ns * tk_busbw_factor(collective, expected_ranks) END AS transfer_busbw_gbps,
       last_rank, last_tied, total_wait_ns, hosts,
       CASE WHEN a2a THEN uneven_ END AS uneven, CASE WHEN a2a THEN in_imb END AS in_imbalance,
       CASE WHEN a2a THEN out_imb END AS out_imbalance, CASE WHEN a2a THEN exchange_ns END AS exchange_ns,
       CASE WHEN a2a AND exchange_ns > 0 THEN sent_bytes / exchange_ns END AS throughput_gbps,
       CASE WHEN NOT host_unknown THEN CASE WHEN hosts = 1 THEN 'intra-node' WHEN hosts = ranks_present THEN 'inter-node'
                                            ELSE 'mixed' END END AS link_kind
FROM i2;
