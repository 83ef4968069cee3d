-- stragglers: per rank, how often it was the last to arrive at a collective and how much waiting that
-- caused, and how long it waited for others. Counts clean instances only (collective_instances.status):
-- an instance with missing ranks, a mismatch, or ranks order matching could not align says nothing
-- trustworthy about who came last.
-- @stage reduce
-- @uses collective_waits, collective_instances
-- @column rank: global rank
-- @column instances: clean collective instances the rank took part in, count
-- @column times_last: instances where the rank started last (ties: collective_waits.is_last), count
-- @column times_first: instances where the rank started first (ties: the lowest rank), count
-- @column last_share_pct: 100 · times_last / instances, %
-- @column caused_wait_ns: waiting of the other ranks in the instances where this rank was last, ns
-- @column own_wait_ns: time this rank waited for the last rank, summed, ns
CREATE OR REPLACE VIEW stragglers AS
SELECT w.rank, count(*) AS instances,
       count(*) FILTER (WHERE w.is_last) AS times_last,
       CAST(coalesce(sum(i.total_wait_ns) FILTER (WHERE w.is_last), 0) AS BIGINT) AS caused_wait_ns,
       CAST(sum(w.wait_ns) AS BIGINT) AS own_wait_ns,
       count(*) FILTER (WHERE w.is_first) AS times_first,
       100.0 * count(*) FILTER (WHERE w.is_last) / count(*) AS last_share_pct
FROM collective_waits w JOIN collective_instances i USING (instance_key)
WHERE i.status = 'clean'
GROUP BY w.rank;
