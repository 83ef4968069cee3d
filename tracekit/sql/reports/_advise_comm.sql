-- _advise_comm: per process group and collective, one step of one of the group's ranks (means over its
-- ranks and the profiled steps): the collectives, their transfer time and the part of it the step pays.
-- @stage report
-- @uses collective_waits, collective_instances, collectives, comm_exposure, step_breakdown
-- @column group_label: process group (comm_exposure.group_label)
-- @column pg_name: process group name (NULL when the trace does not say)
-- @column pg_desc: process group description (NULL when the trace does not say)
-- @column group_size: ranks in the group (NULL when unknown), count
-- @column ranks: ranks that ran the group's collectives, comma-separated
-- @column collective: the collective
-- @column count_per_step: collectives per rank and step, count
-- @column bytes_per_step: message bytes per rank and step, bytes (NULL when some have no size)
-- @column mean_message_bytes: mean message, bytes
-- @column kernel_ms: comm kernel time per rank and step, waiting included, ms
-- @column transfer_ms: transfer time per rank and step (clean matched instances' fastest rank; NULL when some collectives matched no clean instance), ms
-- @column exposed_ms: exposed transfer per rank and step (step_breakdown part comm), ms
-- @column compute_ms: compute time per rank and step on the group's ranks (step_breakdown part compute), ms
-- @column group_exposed_ms: exposed transfer of the whole group (all its collectives) per rank and step, ms
-- @column transfer_busbw_p50_gbps: median bus bandwidth of its clean instances over their transfer time, GB/s
-- @column link_kind: the group's links (collectives.link_kind): intra-node, inter-node, mixed; NULL when unknown or not one kind
WITH st AS (SELECT greatest(count(DISTINCT step) FILTER (WHERE step <> -1), 1) AS n FROM step_breakdown),
c AS (
    SELECT x.group_label, x.rank, x.collective, x.bytes, x.dur_ns, i.transfer_ns, i.transfer_busbw_gbps,
           k.pg_name, k.pg_desc, k.group_size, k.link_kind
    FROM comm_exposure x JOIN collectives k ON k.rank = x.rank AND k.event_index = x.event_index
    LEFT JOIN collective_waits w ON w.rank = x.rank AND w.event_index = x.event_index
    LEFT JOIN collective_instances i ON i.instance_key = w.instance_key AND i.status = 'clean'),
gr AS (SELECT DISTINCT group_label, rank FROM c),
comp AS (SELECT gr.group_label, sum(b.ns) AS ns FROM gr JOIN step_breakdown b ON b.rank = gr.rank AND b.part = 'compute'
         GROUP BY gr.group_label),
expo AS (SELECT detail AS group_label, collective, sum(ns) AS ns FROM step_breakdown WHERE part = 'comm' GROUP BY ALL),
gexpo AS (SELECT group_label, sum(ns) AS ns FROM expo GROUP BY ALL),
g AS (
    SELECT group_label, collective, any_value(pg_name) AS pg_name, any_value(pg_desc) AS pg_desc,
           max(group_size) AS group_size, count(DISTINCT rank) AS nr,
           string_agg(DISTINCT CAST(rank AS VARCHAR), ',' ORDER BY CAST(rank AS VARCHAR)) AS ranks,
           count(*) AS n, sum(bytes) AS bytes, count(bytes) AS sized, sum(dur_ns) AS kernel_ns,
           sum(transfer_ns) AS transfer_ns, count(transfer_ns) AS matched,
           quantile_cont(transfer_busbw_gbps, 0.5) AS transfer_busbw_p50_gbps,
           CASE WHEN count(DISTINCT link_kind) = 1 AND count(link_kind) = count(*) THEN any_value(link_kind) END
               AS link_kind
    FROM c GROUP BY group_label, collective),
grank AS (SELECT group_label, count(DISTINCT rank) AS nr FROM c GROUP BY group_label)
SELECT g.group_label, g.pg_name, g.pg_desc, g.group_size, g.ranks, g.collective,
       g.n / g.nr / st.n AS count_per_step,
       CASE WHEN g.sized = g.n THEN g.bytes / g.nr / st.n END AS bytes_per_step,
       g.bytes / nullif(g.sized, 0) AS mean_message_bytes,
       g.kernel_ns / g.nr / st.n / 1e6 AS kernel_ms,
       CASE WHEN g.matched = g.n THEN g.transfer_ns / g.nr / st.n / 1e6 END AS transfer_ms,
       coalesce(expo.ns, 0) / gr.nr / st.n / 1e6 AS exposed_ms,
       coalesce(comp.ns, 0) / gr.nr / st.n / 1e6 AS compute_ms,
       coalesce(gexpo.ns, 0) / gr.nr / st.n / 1e6 AS group_exposed_ms,
       g.transfer_busbw_p50_gbps, g.link_kind
FROM g JOIN grank gr USING (group_label) LEFT JOIN expo USING (group_label, collective)
LEFT JOIN gexpo USING (group_label) LEFT JOIN comp USING (group_label), st
ORDER BY exposed_ms DESC
