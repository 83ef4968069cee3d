-- _lead_up_parts: what fills each rank's lead-ups (_lead_ups), summed by name (why_late): the CPU ops of
-- the launching thread that start in it (cpu_op, user_annotation, python_function, not ProfilerStep#;
-- nested ops count each), the GPU kernels (not comm) launched in it, and the lead-up's own length. Empty
-- lead-ups (t0_ns >= t1_ns) have no rows. Every lead-up of the rank: _lead_up_sums keeps those of clean
-- instances. A rank's rows read only its own tables: a rank part derives them where it is made.
-- @stage finish
-- @uses _lead_ups, events, gpu_kernels
-- @column rank: global rank
-- @column event_index: the collective whose lead-up it is (_lead_ups.event_index)
-- @column kind: lead-up (its whole length), cpu op or kernel
-- @column name: the op or kernel name (lead-up: a description)
-- @column ns: its time in the lead-up: the ops' or kernels' durations summed, ns
CREATE OR REPLACE VIEW _lead_up_parts AS
WITH win AS (
    SELECT rank, event_index, pid, tid, t0_ns AS t0, t1_ns AS t1 FROM _lead_ups WHERE t0_ns < t1_ns),
cpu AS (
    SELECT rank, name, ts_ns, dur_ns, pid, tid FROM events
    WHERE ph = 'X' AND cat IN ('cpu_op', 'user_annotation', 'python_function') AND name NOT LIKE 'ProfilerStep#%'
      AND rank IN (SELECT rank FROM win)),  -- (a rank without a window: not read)
-- the lead-ups of a rank follow one another (each starts where the one before ended), so each op falls
-- in the one that starts last at or before it, if it ends after the op's start
cpu_in AS (
    SELECT w.rank, w.event_index, 'cpu op' AS kind, x.name, CAST(sum(coalesce(x.dur_ns, 0)) AS BIGINT) AS ns
    FROM cpu x ASOF JOIN win w ON w.rank = x.rank AND x.ts_ns >= w.t0
    WHERE x.ts_ns < w.t1 AND x.pid = w.pid AND x.tid = w.tid
    GROUP BY ALL),
gpu_in AS (
    SELECT w.rank, w.event_index, 'kernel' AS kind, k.name, CAST(sum(k.dur_ns) AS BIGINT) AS ns
    FROM (SELECT * FROM gpu_kernels WHERE kind <> 'comm' AND launch_ts_ns IS NOT NULL
                                      AND rank IN (SELECT rank FROM win)) k
    ASOF JOIN win w ON w.rank = k.rank AND k.launch_ts_ns >= w.t0
    WHERE k.launch_ts_ns < w.t1
    GROUP BY ALL)
SELECT * FROM cpu_in UNION ALL SELECT * FROM gpu_in
UNION ALL SELECT rank, event_index, 'lead-up', 'from the previous collective''s launch (or the step''s start) to this one''s', t1 - t0
FROM win;
