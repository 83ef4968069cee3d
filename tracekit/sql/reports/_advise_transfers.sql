-- _advise_transfers: each rank's part in each matched collective instance, as the dependency graph's
-- transfer node (graph_nodes: rank x 2^40 + event_index x 4 + 1), with its group, collective and the
-- instance's bus bandwidth, for the counterfactual replays of advise and whatif.
-- @stage report
-- @uses collective_waits, collective_instances, collectives
-- @column node_id: the transfer node of graph_nodes
-- @column rank: global rank
-- @column group_label: process group: pg_desc when it names one, else the group's ranks, else its name
-- @column pg_name: process group name (NULL when the trace does not say)
-- @column pg_desc: process group description (NULL when the trace does not say)
-- @column group_size: ranks in the group (NULL when unknown), count
-- @column collective: the collective
-- @column bytes: message bytes (NULL when unknown), bytes
-- @column transfer_busbw_gbps: the instance's bus bandwidth over its transfer time (NULL when not clean or unsized), GB/s
SELECT w.rank * 1099511627776 + w.event_index * 4 + 1 AS node_id, w.rank,
       tk_group_label(c.pg_desc, c.pg_ranks, c.pg_name) AS group_label, c.pg_name, c.pg_desc, c.group_size,
       w.collective, w.bytes, CASE WHEN i.status = 'clean' THEN i.transfer_busbw_gbps END AS transfer_busbw_gbps
FROM collective_waits w JOIN collective_instances i USING (instance_key)
JOIN collectives c ON c.rank = w.rank AND c.event_index = w.event_index
WHERE i.ranks_present >= 2 AND i.status <> 'unaligned'
