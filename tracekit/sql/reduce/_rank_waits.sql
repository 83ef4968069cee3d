-- _rank_waits: each rank's part in each matched collective instance (collective_waits) with what the finish
-- reads of its instance (collective_instances: status, last rank, ranks present), in rank order. The finish
-- derives a partition of ranks at a time: each partition joined its ranks' waits to every instance of the
-- job (at 4,096 ranks, 16 partitions each joining 200k instances by their text keys: most of step_breakdown's
-- and _lead_up_sums' time after the sweep); joined once here, and in rank order, each partition reads its
-- ranks' rows only (Parquet's row-group statistics).
-- @stage reduce
-- @uses collective_waits, collective_instances
-- @column rank: global rank
-- @column event_index: index of the event (the kernel or op) in its trace's traceEvents (collective_waits.event_index)
-- @column instance_key: the collective instance's matching key (collective_waits.instance_key)
-- @column wait_ns: time this rank waited for the instance's last rank (collective_waits.wait_ns), ns
-- @column status: the instance's status (collective_instances.status)
-- @column last_rank: the rank that started last (collective_instances.last_rank)
-- @column ranks_present: ranks that ran the instance (collective_instances.ranks_present), count
CREATE OR REPLACE VIEW _rank_waits AS
SELECT w.rank, w.event_index, w.instance_key, w.wait_ns, i.status, i.last_rank, i.ranks_present
FROM collective_waits w LEFT JOIN collective_instances i ON i.instance_key = w.instance_key
ORDER BY w.rank, w.event_index;
