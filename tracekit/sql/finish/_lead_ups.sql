-- _lead_ups: each rank's lead-up to each of its collectives (why_late): the time on its launching thread
-- from its previous collective's launch (the rank's first: from the start of its ProfilerStep) to this
-- one's, on the rank's own trace clock. A GPU collective is launched by the runtime call that launched
-- its kernel. A Gloo op runs on a worker thread of Gloo's, issued by a c10d op (c10d::allreduce_, ...) on
-- the training thread: the rank's Gloo ops and its c10d ops, each in order of start, are paired one for one
-- where they are as many and each pair agrees: the Gloo op starts after its c10d op, runs its collective
-- (FSDP's reduce-scatter runs as a Gloo all-reduce) on as many elements, where both record them (the trace
-- links them no other way; several groups' worker threads with a backlog run ops out of their issue order:
-- the kinds or sizes then disagree); the Gloo op is then launched at its c10d op's start, on that op's
-- thread; on a rank where they do not pair so, at the Gloo op's own start, on the worker's thread.
-- Collectives launched at the same instant are ordered as the trace lists them (event_index; the later
-- ones' lead-ups are empty). A rank's rows read only its own tables: a rank part derives them where it is
-- made, and collective_waits joins them to their instances.
-- @stage finish
-- @uses _collectives, gpu_kernels, comm_ops, events, steps
-- @column rank: global rank
-- @column event_index: the collective's event (the kernel or op) in its trace's traceEvents (joins collective_waits)
-- @column pid: the launching thread's process id
-- @column tid: the launching thread's id
-- @column t0_ns: the lead-up's start: the previous collective's launch, or the start of the step (NULL: neither), ns
-- @column t1_ns: the lead-up's end: this collective's launch, ns
CREATE OR REPLACE VIEW _lead_ups AS
WITH gloo AS (
    SELECT rank, event_index, ts_ns, collective, in_nelems,
           row_number() OVER (PARTITION BY rank ORDER BY ts_ns, event_index) AS n
    FROM _collectives WHERE meta_source = 'gloo op'),
issued AS (
    SELECT rank, ts_ns, pid, tid, tk_collective(name) AS collective, shape_in_nelems AS in_nelems,
           row_number() OVER (PARTITION BY rank ORDER BY ts_ns, event_index) AS n
    FROM comm_ops WHERE name LIKE 'c10d::%' AND rank IN (SELECT rank FROM gloo)),
pairs AS (
    SELECT g.rank, g.event_index, i.ts_ns, i.pid, i.tid,
           i.ts_ns <= g.ts_ns
           AND (i.collective IS NULL OR g.collective = i.collective
                OR (i.collective = 'reduce_scatter' AND g.collective = 'allreduce'))
           AND (i.in_nelems IS NULL OR g.in_nelems IS NULL OR i.in_nelems = g.in_nelems) AS agree
    FROM gloo g LEFT JOIN issued i USING (rank, n)),
paired AS (  -- the ranks whose every Gloo op agrees with its c10d op, and no c10d op is left over
    SELECT rank FROM pairs GROUP BY rank
    HAVING bool_and(coalesce(agree, false)) AND count(*) = (SELECT count(*) FROM issued i WHERE i.rank = pairs.rank)),
c AS (
    SELECT c.rank, c.event_index, coalesce(g.launch_ts_ns, p.ts_ns, c.ts_ns) AS t1,
           coalesce(g.launch_pid, p.pid, e.pid) AS pid, coalesce(g.launch_tid, p.tid, e.tid) AS tid
    FROM _collectives c
    LEFT JOIN gpu_kernels g ON g.rank = c.rank AND g.event_index = c.event_index
    LEFT JOIN (SELECT * FROM pairs WHERE rank IN (SELECT rank FROM paired)) p
           ON p.rank = c.rank AND p.event_index = c.event_index
    LEFT JOIN events e ON g.rank IS NULL AND e.rank = c.rank AND e.event_index = c.event_index)
SELECT c.rank, c.event_index, c.pid, c.tid,
       coalesce(lag(c.t1) OVER (PARTITION BY c.rank ORDER BY c.t1, c.event_index), st.ts_ns) AS t0_ns, c.t1 AS t1_ns
FROM c ASOF LEFT JOIN steps st ON st.rank = c.rank AND c.t1 >= st.ts_ns;
