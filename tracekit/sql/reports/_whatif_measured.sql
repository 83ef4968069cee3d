-- _whatif_measured: what a run measured per rank and process group and collective, over the whole trace,
-- for `tracekit whatif` to show beside its prediction of the run's own plan.
-- @stage report
-- @uses collective_waits, collective_instances, collectives, comm_exposure
-- @column rank: global rank
-- @column pg_name: process group name (NULL when the trace does not say)
-- @column pg_desc: process group description (NULL when the trace does not say)
-- @column group_size: ranks in the group (NULL when unknown), count
-- @column collective: collective on this rank (send and recv apart)
-- @column count: collectives, count
-- @column bytes: message bytes summed, bytes (NULL when any of them has no size)
-- @column dur_ns: kernel (or Gloo op) durations summed, waiting included, ns
-- @column exposed_ns: their exposed time (comm_exposure), ns
-- @column transfer_ns: the matched clean instances' transfer times (collective_instances.transfer_ns) summed, ns
-- @column matched: collectives in a matched clean instance, count
SELECT c.rank, c.pg_name, nullif(c.pg_desc, '') AS pg_desc, c.group_size, c.collective, count(*) AS count,
       CASE WHEN count(c.bytes) = count(*) THEN CAST(sum(c.bytes) AS BIGINT) END AS bytes, CAST(sum(c.dur_ns) AS BIGINT) AS dur_ns,
       coalesce(sum(x.exposed_ns), 0.0) AS exposed_ns,
       CAST(coalesce(sum(i.transfer_ns), 0) AS BIGINT) AS transfer_ns, count(i.instance_key) AS matched
FROM collectives c
LEFT JOIN comm_exposure x ON x.rank = c.rank AND x.event_index = c.event_index
LEFT JOIN collective_waits w ON w.rank = c.rank AND w.event_index = c.event_index
LEFT JOIN collective_instances i ON i.instance_key = w.instance_key AND i.status = 'clean'
GROUP BY ALL
