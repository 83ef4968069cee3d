-- stragglers: per rank, how often it was the last to arrive at a collective and how much waiting that
-- caused, and how long it waited for others. Counts clean instances only (collective_instances.status):
-- an instance with missing ranks, a mismatch, or ranks order matching could not align says nothing
-- trustworthy about who came last.
-- @column rank: global rank
-- @column instances: clean collective instances the rank took part in, count
-- @column times_last: instances where this rank started last, count
-- @column caused_wait_ns: waiting of the other ranks in the instances where this rank was last, ns
-- @column own_wait_ns: time this rank waited for the last rank, summed, ns
CREATE OR REPLACE VIEW stragglers AS
SELECT w.rank, count(*) AS instances,
       count(*) FILTER (WHERE i.last_rank = w.rank) AS times_last,
       CAST(coalesce(sum(i.total_wait_ns) FILTER (WHERE i.last_rank = w.rank), 0) AS BIGINT) AS caused_wait_ns,
       CAST(sum(w.wait_ns) AS BIGINT) AS own_wait_ns
FROM collective_waits w JOIN collective_instances i USING (instance_key)
WHERE i.status = 'clean'
GROUP BY w.rank;
