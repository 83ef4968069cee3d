-- _lead_ups: each rank's lead-up to each of its collectives (why_late): the time on its launching thread
-- from its previous collective's launch (the rank's first: from the start of its ProfilerStep) to this
-- one's, on the rank's own trace clock. A GPU collective is launched by the runtime call that launched
-- its kernel; a Gloo op at the op's start. Collectives launched at the same instant are ordered as the
-- trace lists them (event_index; the later ones' lead-ups are empty). A rank's rows read only its own
-- tables: a rank part derives them where it is made, and collective_waits joins them to their instances.
-- @stage finish
-- @uses _collectives, gpu_kernels, events, steps
-- @column rank: global rank
-- @column event_index: the collective's event (the kernel or op) in its trace's traceEvents (joins collective_waits)
-- @column pid: the launching thread's process id
-- @column tid: the launching thread's id
-- @column t0_ns: the lead-up's start: the previous collective's launch, or the start of the step (NULL: neither), ns
-- @column t1_ns: the lead-up's end: this collective's launch, ns
CREATE OR REPLACE VIEW _lead_ups AS
WITH c AS (
    SELECT c.rank, c.event_index, coalesce(g.launch_ts_ns, c.ts_ns) AS t1,
           coalesce(g.launch_pid, e.pid) AS pid, coalesce(g.launch_tid, e.tid) AS tid
    FROM _collectives c
    LEFT JOIN gpu_kernels g ON g.rank = c.rank AND g.event_index = c.event_index
    LEFT JOIN events e ON g.rank IS NULL AND e.rank = c.rank AND e.event_index = c.event_index)
SELECT c.rank, c.event_index, c.pid, c.tid,
       coalesce(lag(c.t1) OVER (PARTITION BY c.rank ORDER BY c.t1, c.event_index), st.ts_ns) AS t0_ns, c.t1 AS t1_ns
FROM c ASOF LEFT JOIN steps st ON st.rank = c.rank AND c.t1 >= st.ts_ns;
