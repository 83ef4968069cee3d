-- _whatif_points: the transfer times `tracekit whatif` fits its network law to. Matched clean instances:
-- one row each, timed by the fastest rank (collective_instances.transfer_ns: waiting left out; a send/recv
-- pair by its receive's end after the later arrival where that is sooner), with the
-- group of its lowest rank. A run of one rank has no matched instance: its own collectives, timed by their
-- kernel duration (which includes waiting for the ranks that were not traced: an upper bound).
-- @stage report
-- @uses _collectives, collective_waits, collective_instances, collectives, traces
-- @column rank: the rank whose row names the group (lowest rank of the instance; the one rank)
-- @column collective: collective; sendrecv for a matched send/recv pair
-- @column pg_name: process group name on that rank (NULL when the trace does not say)
-- @column pg_desc: process group description (NULL when the trace does not say)
-- @column group_size: ranks in the instance (expected_ranks), or the group size the one rank reports, count
-- @column bytes: message bytes
-- @column transfer_ns: transfer time, ns
-- @column source: matched (a clean instance's fastest rank) or one rank (a kernel's duration)
-- @column link_kind: intra-node, inter-node or mixed (collective_instances.link_kind; one rank: collectives.link_kind); NULL when unknown
-- @column step: ProfilerStep of the instance on that rank (NULL outside steps)
WITH w AS (SELECT instance_key, min(rank) AS rank, arg_min(event_index, rank) AS event_index,
                  max(end_ns) FILTER (WHERE collective = 'recv') AS recv_end
           FROM collective_waits GROUP BY instance_key),
one AS (SELECT count(DISTINCT rank) = 1 AS yes FROM traces)
SELECT w.rank, i.collective, c.pg_name, nullif(c.pg_desc, '') AS pg_desc, CAST(i.expected_ranks AS BIGINT) AS group_size,
       i.bytes,
       -- a send/recv pair: the data is there when the receive ends (an isend's record stays open until its
       -- thread waits for it, a pipeline's next micro-batch later)
       CASE WHEN w.recv_end > i.last_start_ns THEN least(i.transfer_ns, w.recv_end - i.last_start_ns)
            ELSE i.transfer_ns END AS transfer_ns,
       'matched' AS source, i.link_kind, c.step
FROM collective_instances i JOIN w USING (instance_key)
JOIN _collectives c ON c.rank = w.rank AND c.event_index = w.event_index
WHERE i.status = 'clean' AND i.bytes > 0 AND i.transfer_ns > 0 AND i.expected_ranks IS NOT NULL
UNION ALL
SELECT c.rank, c.collective, c.pg_name, nullif(c.pg_desc, ''), CAST(c.group_size AS BIGINT), c.bytes, c.dur_ns, 'one rank',
       c.link_kind, c.step
FROM collectives c, one
WHERE one.yes AND c.bytes > 0 AND c.dur_ns > 0
  AND (c.group_size IS NOT NULL OR c.collective IN ('send', 'recv'))
