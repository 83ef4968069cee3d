-- gpu_kernels: every GPU activity (kernel, memcpy, memset) with its kind, its stream, the CPU-side
-- runtime call that launched it (matched by rank and correlation id) and the step of that call.
-- @stage fact
-- @uses steps
-- @column rank: global rank
-- @column event_index: index of the event (the kernel) in its trace's traceEvents
-- @column name: the event's name (a kernel's)
-- @column cat: the trace event's category: kernel, gpu_memcpy or gpu_memset
-- @column kind: the row's kind: comm, compute, memory or other (rule: macro tk_kernel_kind, docs/definitions.md)
-- @column device: GPU index (pid of the GPU track)
-- @column stream: GPU stream (args stream, else tid)
-- @column ts_ns: start, ns (trace clock)
-- @column dur_ns: duration, ns
-- @column end_ns: end: ts_ns + dur_ns, ns
-- @column correlation: correlation id shared with the launch
-- @column launch_ts_ns: start of the launching runtime call (cudaLaunchKernel, hipLaunchKernel, ...), ns
-- @column launch_pid: pid of the launching thread's process
-- @column launch_tid: thread that launched the kernel
-- @column launch_name: the runtime call's name
-- @column step: ProfilerStep number whose CPU span holds the launch; a kernel whose launch is missing: the step holding its own start, unless it was launched before the window (NULL: no step)
-- @column launch_status: recorded (the launch is in the trace), before window (no launch, and its correlation id is below the rank's first recorded runtime call: launched before the profiler started) or missing (no launch inside the window: a dropped CPU event)
-- @column comm_library: comm kernels: the library the catalogue names (tk_comm_kernels: nccl, deepep, ...); else NULL
-- @column comm_kind: the communication kernel's kind: collective, p2p, ep_dispatch, ep_combine or sync (tk_comm_kernels); NULL for other kernels
-- @column comm_collective: comm kernels: the collective the catalogue says for the name, else NULL
-- @column launch_end_ns: end of the launching runtime call (its start where it records no duration; NULL without a launch), ns
CREATE OR REPLACE VIEW gpu_kernels AS
-- the kind rules run once per distinct (name, category), not once per kernel; a kernel carries the
-- number of its (name, category) (nid) and takes the name at the end: sorting long names along with
-- every kernel (the ASOF join sorts its rows) cost more than the rest of the rule
WITH names AS MATERIALIZED (
    SELECT row_number() OVER (ORDER BY name, cat) AS nid, name, cat, tk_kernel_kind(name, cat) AS kind,
           CASE WHEN cat = 'kernel' THEN tk_comm_kernel(name) END AS ck
    FROM (SELECT DISTINCT name, cat FROM events WHERE ph = 'X' AND tk_gpu_cat(cat))),
k AS (
    SELECT e.rank, e.event_index, n.nid, e.pid AS device,
           coalesce(e.stream, e.tid) AS stream, e.ts_ns, coalesce(e.dur_ns, 0) AS dur_ns,
           e.ts_ns + coalesce(e.dur_ns, 0) AS end_ns, e.correlation
    FROM events e JOIN names n ON n.name IS NOT DISTINCT FROM e.name AND n.cat = e.cat
    WHERE e.ph = 'X' AND tk_gpu_cat(e.cat)),
l AS (
    SELECT rank, correlation, min(ts_ns) AS launch_ts_ns, arg_min(pid, ts_ns) AS launch_pid,
           arg_min(tid, ts_ns) AS launch_tid, arg_min(name, ts_ns) AS launch_name,
           arg_min(ts_ns + coalesce(dur_ns, 0), ts_ns) AS launch_end_ns
    FROM events
    WHERE ph = 'X' AND correlation IS NOT NULL AND NOT tk_gpu_cat(cat)
    GROUP BY rank, correlation),
first_call AS (SELECT rank, min(correlation) AS c FROM l GROUP BY rank),
kl AS (
    SELECT k.*, l.launch_ts_ns, l.launch_pid, l.launch_tid, l.launch_name, l.launch_end_ns,
           CASE WHEN l.correlation IS NOT NULL THEN 'recorded'
                WHEN k.correlation < f.c THEN 'before window' ELSE 'missing' END AS launch_status,
           -- a kernel launched before the profile started belongs to no step: it is the tail of a step
           -- the trace does not hold (its own start would put it in the first step)
           CASE WHEN l.correlation IS NOT NULL THEN l.launch_ts_ns
                WHEN k.correlation < f.c THEN NULL ELSE k.ts_ns END AS t
    FROM k LEFT JOIN l ON l.rank = k.rank AND l.correlation = k.correlation
    LEFT JOIN first_call f ON f.rank = k.rank)
-- one step per kernel: the latest-starting step span at or before the launch, if the launch is inside it
-- (ASOF: never two rows for one kernel, even where step spans overlap)
SELECT kl.rank, kl.event_index, n.name, n.cat, n.kind, kl.device, kl.stream, kl.ts_ns, kl.dur_ns, kl.end_ns,
       kl.correlation, kl.launch_ts_ns, kl.launch_pid, kl.launch_tid, kl.launch_name,
       CASE WHEN tk_in_span(kl.t, st.ts_ns, st.end_ns) THEN st.step END AS step,
       CASE WHEN n.kind = 'comm' THEN n.ck.library END AS comm_library,
       CASE WHEN n.kind = 'comm' THEN n.ck.kind END AS comm_kind,
       CASE WHEN n.kind = 'comm' THEN n.ck.collective END AS comm_collective, kl.launch_status, kl.launch_end_ns
FROM kl ASOF LEFT JOIN steps st ON st.rank = kl.rank AND kl.t >= st.ts_ns
JOIN names n ON n.nid = kl.nid;
