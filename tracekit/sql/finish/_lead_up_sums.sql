-- _lead_up_sums: what fills the lead-ups (_lead_up_parts) of each clean instance of more than one rank,
-- by kind and name, summed over the ranks of one partition of the finish, with the instance's last rank's
-- part apart: why_late sums an instance's rows over the partitions, so it never reads every rank's rows
-- (at 4,096 ranks, 512 times the rows of an 8-rank run). Only instances with a last rank
-- (collective_instances.last_rank).
-- @stage finish
-- @uses _lead_up_parts, _rank_waits
-- @column instance_key: the collective instance (collective_waits)
-- @column kind: lead-up (its whole length), cpu op or kernel
-- @column name: the op or kernel name (lead-up: a description)
-- @column ns: its time in the lead-ups of the partition's ranks, summed, ns
-- @column late_ns: its time in the lead-up of the instance's last rank when that rank is in the partition, else 0, ns
CREATE OR REPLACE VIEW _lead_up_sums AS
SELECT w.instance_key, x.kind, x.name, sum(x.ns) AS ns,
       coalesce(sum(x.ns) FILTER (WHERE x.rank = w.last_rank), 0) AS late_ns
FROM _lead_up_parts x
JOIN _rank_waits w ON w.rank = x.rank AND w.event_index = x.event_index
WHERE w.status = 'clean' AND w.ranks_present > 1 AND w.last_rank IS NOT NULL
GROUP BY w.instance_key, x.kind, x.name;
