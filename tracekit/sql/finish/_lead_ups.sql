-- _lead_ups: each rank's lead-up to each of its collectives (why_late): the time on its launching thread
-- from its previous collective's launch (the rank's first: from the start of its ProfilerStep) to this
-- one's. A GPU collective is launched by the runtime call that launched its kernel; a Gloo op at the
-- op's start. Collectives launched at the same instant are ordered by instance_key (the later ones' lead-ups
-- are empty).
-- @stage finish
-- @uses collective_waits, gpu_kernels, events, steps
-- @column instance_key: the collective instance (collective_waits)
-- @column rank: global rank
-- @column pid: the launching thread's process id
-- @column tid: the launching thread's id
-- @column t0_ns: the lead-up's start: the previous collective's launch, or the start of the step (NULL: neither), ns
-- @column t1_ns: the lead-up's end: this collective's launch, ns
CREATE OR REPLACE VIEW _lead_ups AS
WITH c AS (
    SELECT w.instance_key, w.rank, coalesce(g.launch_ts_ns, w.ts_ns) AS t1,
           coalesce(g.launch_pid, e.pid) AS pid, coalesce(g.launch_tid, e.tid) AS tid
    FROM collective_waits w
    LEFT JOIN gpu_kernels g ON g.rank = w.rank AND g.event_index = w.event_index
    LEFT JOIN events e ON g.rank IS NULL AND e.rank = w.rank AND e.event_index = w.event_index)
SELECT c.instance_key, c.rank, c.pid, c.tid,
       coalesce(lag(c.t1) OVER (PARTITION BY c.rank ORDER BY c.t1, c.instance_key), st.ts_ns) AS t0_ns, c.t1 AS t1_ns
FROM c ASOF LEFT JOIN steps st ON st.rank = c.rank AND c.t1 >= st.ts_ns;
