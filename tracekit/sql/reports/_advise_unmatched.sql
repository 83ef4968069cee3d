-- _advise_unmatched: each collective kernel of a rank that no matched instance holds (its peers are not in
-- the run, or did not match), as the dependency graph's comm node (graph_nodes: rank x 2^40 + event_index
-- x 4), with its group and collective: on such a kernel the trace cannot tell the transfer from the waiting
-- for the other ranks, so hiding it (advise, whatif --overlap) bounds the saving from above.
-- @stage report
-- @uses graph_nodes, collectives
-- @column node_id: the comm node of graph_nodes
-- @column rank: global rank
-- @column group_label: process group: pg_desc when it names one, else the group's ranks, else its name
-- @column pg_name: process group name (NULL when the trace does not say)
-- @column pg_desc: process group description (NULL when the trace does not say)
-- @column group_size: ranks in the group (NULL when unknown), count
-- @column collective: the collective
SELECT n.node_id, n.rank, tk_group_label(c.pg_desc, c.pg_ranks, c.pg_name) AS group_label, c.pg_name, c.pg_desc,
       c.group_size, c.collective
FROM graph_nodes n JOIN collectives c ON c.rank = n.rank AND c.event_index = n.event_index
WHERE n.kind = 'comm'
