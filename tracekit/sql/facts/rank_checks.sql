-- rank_checks: one row per rank of the counts doctor's checks of the trace itself need (kernels without a
-- launch, kernels launched before the profile, kernels after the last step, CUDA graph launches, the
-- first kernel's time), counted at ingest from the rank's kernels and events so that doctor reads one
-- row per rank, not every kernel and event of the run. A rank with no GPU activity and no
-- cudaGraphLaunch has no row.
-- @stage fact
-- @uses gpu_kernels, steps, events
-- @column rank: global rank
-- @column kernels: GPU kernels (gpu_kernels.cat kernel; memcpy and memset not counted), count
-- @column comm_kernels: GPU activities whose kind is comm, count
-- @column no_launch_kernels: kernels whose launch is missing inside the window (launch_status missing), count
-- @column early_kernels: kernels launched before the profile started (launch_status before window), count
-- @column early_ns: their time, ns
-- @column early_comm_ns: GPU time of comm activities launched before the profile started, ns (NULL: none)
-- @column tail_kernels: GPU activities launched at or after the end of the rank's last ProfilerStep, count (0 when the rank has no step)
-- @column first_kernel_ts_ns: start of the rank's first GPU activity, ns (trace clock; NULL: none)
-- @column graph_launches: cudaGraphLaunch calls (complete events), count
-- @column negative_gpu: GPU activities (kernels, copies, sets) whose recorded duration is negative, count
CREATE OR REPLACE VIEW rank_checks AS
WITH last_step AS (SELECT rank, max(end_ns) AS last_end FROM steps GROUP BY rank),
k AS (
    SELECT g.rank, count(*) FILTER (WHERE g.cat = 'kernel') AS kernels,
           count(*) FILTER (WHERE g.kind = 'comm') AS comm_kernels,
           count(*) FILTER (WHERE g.launch_status = 'missing' AND g.cat = 'kernel') AS no_launch_kernels,
           count(*) FILTER (WHERE g.launch_status = 'before window' AND g.cat = 'kernel') AS early_kernels,
           CAST(sum(g.dur_ns) FILTER (WHERE g.launch_status = 'before window' AND g.cat = 'kernel') AS BIGINT)
               AS early_ns,
           CAST(sum(g.dur_ns) FILTER (WHERE g.launch_status = 'before window' AND g.kind = 'comm') AS BIGINT)
               AS early_comm_ns,
           count(*) FILTER (WHERE g.launch_ts_ns >= l.last_end) AS tail_kernels,
           count(*) FILTER (WHERE g.dur_ns < 0) AS negative_gpu,
           min(g.ts_ns) AS first_kernel_ts_ns
    FROM gpu_kernels g LEFT JOIN last_step l USING (rank) GROUP BY g.rank),
graphs AS (SELECT rank, count(*) AS graph_launches FROM events WHERE ph = 'X' AND name = 'cudaGraphLaunch'
           GROUP BY rank)
SELECT rank, coalesce(k.kernels, 0) AS kernels, coalesce(k.comm_kernels, 0) AS comm_kernels,
       coalesce(k.no_launch_kernels, 0) AS no_launch_kernels, coalesce(k.early_kernels, 0) AS early_kernels,
       k.early_ns, k.early_comm_ns, coalesce(k.tail_kernels, 0) AS tail_kernels, k.first_kernel_ts_ns,
       coalesce(graphs.graph_launches, 0) AS graph_launches, coalesce(k.negative_gpu, 0) AS negative_gpu
FROM k FULL OUTER JOIN graphs USING (rank);
