-- _lead_up_ranks: per instance, how many of the ranks of one partition of the finish have a lead-up
-- (_lead_ups.t0_ns known); why_late sums an instance's rows over the partitions to keep the instances
-- where every rank has one.
-- @stage finish
-- @uses _lead_ups, _rank_waits
-- @column instance_key: the collective instance (collective_waits)
-- @column ranks: the partition's ranks in the instance whose lead-up has a start, count
CREATE OR REPLACE VIEW _lead_up_ranks AS
SELECT w.instance_key, count(*) AS ranks
FROM _lead_ups u JOIN _rank_waits w ON w.rank = u.rank AND w.event_index = u.event_index
WHERE u.t0_ns IS NOT NULL
GROUP BY w.instance_key;
