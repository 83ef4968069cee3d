-- _lead_up_parts: what fills each rank's lead-up (_lead_ups) to the clean instances of more than one
-- rank, summed by name (why_late): the CPU ops of the launching thread that start in it (cpu_op,
-- user_annotation, python_function, not ProfilerStep#; nested ops count each), the GPU kernels (not comm)
-- launched in it, and the lead-up's own length. Empty lead-ups (t0_ns >= t1_ns) have no rows.
-- @stage finish
-- @uses _lead_ups, collective_instances, events, gpu_kernels
-- @column instance_key: the collective instance (collective_waits)
-- @column rank: global rank
-- @column kind: lead-up (its whole length), cpu op or kernel
-- @column name: the op or kernel name (lead-up: a description)
-- @column ns: its time in the lead-up: the ops' or kernels' durations summed, ns
CREATE OR REPLACE VIEW _lead_up_parts AS
WITH win AS (
    SELECT u.instance_key, u.rank, u.pid, u.tid, u.t0_ns AS t0, u.t1_ns AS t1
    FROM _lead_ups u JOIN collective_instances i USING (instance_key)
    WHERE i.status = 'clean' AND i.ranks_present > 1 AND u.t0_ns < u.t1_ns),
cpu AS (
    SELECT rank, name, ts_ns, dur_ns, pid, tid FROM events
    WHERE ph = 'X' AND cat IN ('cpu_op', 'user_annotation', 'python_function') AND name NOT LIKE 'ProfilerStep#%'
      AND rank IN (SELECT rank FROM win)),  -- (a rank without a window, as every rank of a one-rank run: not read)
cpu_in AS (
    SELECT w.instance_key, w.rank, 'cpu op' AS kind, x.name, CAST(sum(coalesce(x.dur_ns, 0)) AS BIGINT) AS ns
    FROM cpu x ASOF JOIN win w ON w.rank = x.rank AND x.ts_ns >= w.t0
    WHERE x.ts_ns < w.t1 AND x.pid = w.pid AND x.tid = w.tid
    GROUP BY ALL),
gpu_in AS (
    SELECT w.instance_key, w.rank, 'kernel' AS kind, k.name, CAST(sum(k.dur_ns) AS BIGINT) AS ns
    FROM (SELECT * FROM gpu_kernels WHERE kind <> 'comm' AND launch_ts_ns IS NOT NULL
                                      AND rank IN (SELECT rank FROM win)) k
    ASOF JOIN win w ON w.rank = k.rank AND k.launch_ts_ns >= w.t0
    WHERE k.launch_ts_ns < w.t1
    GROUP BY ALL)
SELECT * FROM cpu_in UNION ALL SELECT * FROM gpu_in
UNION ALL SELECT instance_key, rank, 'lead-up', 'from the previous collective''s launch (or the step''s start) to this one''s', t1 - t0
FROM win;
