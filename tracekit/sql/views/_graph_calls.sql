-- _graph_calls: the CPU runtime calls the dependency graph keeps: each call that launched GPU work (its
-- correlation id is a GPU op's; the earliest call of that id, as gpu_kernels takes it) and each
-- synchronize call (cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize and their HIP
-- twins). A call waits for the GPU (blocking) when
--   - it is a synchronize call;
--   - the copy or memset it issued ended before it returned (a memcpy to pageable host memory, cudaMemcpy;
--     never a kernel or graph launch: a 10 us cudaLaunchKernel whose 3 us kernel ran within it is a slow
--     launch, not the host waiting for its kernel, which made 20 such launches a step read 200 us blocked);
--   - it is a launch that waited for room in a full launch queue: it lasted 10 us or more, returned within
--     5 us after a GPU op of the rank ended that had started by 5 us after it began (the GPU ran it all
--     through the call), its own op started after it returned behind 8 ops or more that started since it
--     began (a full queue is deep: a slow 30 us launch whose op started 2 us after it returned, as the one
--     before ended, is the host's own time), and so did the thread's launch before or after it (a full
--     queue holds launch after launch; one alone ended by chance as an op did: 1 to 17 launches of
--     thousands on the shared traces). A GPU-bound rank whose host runs a step ahead blocks so in every
--     launch, which read as its host busy with its ops all step.
-- Then wait_index is the GPU op it waited for: its own op (a copy), else the rank's GPU op that ended last
-- at or before the call's end (the trace does not say which stream a synchronize waited for: the op that
-- ended last before it returned is the one it can have waited for). Other runtime calls (queries,
-- attributes, cudaStreamWaitEvent) stay CPU time between the kept nodes.
-- @stage view
-- @uses events, gpu_kernels
-- @column rank: global rank
-- @column event_index: the call's index in its trace's traceEvents
-- @column name: the runtime call's name
-- @column pid: process id of the calling thread
-- @column tid: the calling thread
-- @column ts_ns: start, ns (trace clock)
-- @column end_ns: end, ns (trace clock)
-- @column wait_index: blocking calls: the event_index of the GPU op the call waited for; else NULL
CREATE OR REPLACE VIEW _graph_calls AS
WITH first_call AS (
    SELECT rank, correlation, arg_min(event_index, ts_ns) AS event_index
    FROM events WHERE ph = 'X' AND correlation IS NOT NULL AND NOT tk_gpu_cat(cat)
    GROUP BY rank, correlation),
own AS (  -- per launching call: its GPU op that ended last
    SELECT c.rank, c.event_index, max(g.end_ns) AS op_end, arg_max(g.event_index, g.end_ns) AS op_index,
           min(g.ts_ns) AS op_start
    FROM first_call c JOIN gpu_kernels g ON g.rank = c.rank AND g.correlation = c.correlation
    GROUP BY ALL),
calls AS (
    SELECT e.rank, e.event_index, e.name, e.pid, e.tid, e.ts_ns, e.ts_ns + coalesce(e.dur_ns, 0) AS end_ns,
           o.op_end, o.op_index, o.op_start, e.name ILIKE '%synchronize%' AS is_sync
    FROM events e LEFT JOIN own o ON o.rank = e.rank AND o.event_index = e.event_index
    WHERE e.ph = 'X' AND e.cat IN ('cuda_runtime', 'cuda_driver')
      AND (o.event_index IS NOT NULL OR e.name ILIKE '%synchronize%')),
ends AS (SELECT rank, ts_ns, end_ns, event_index FROM gpu_kernels),
held AS (
    SELECT c.*, g.event_index AS g_index,
           -- a launch into a full queue: it returns as an op that ran through the call completes (its slot
           -- freed), its own op queued behind
           c.name ILIKE '%launch%' AND c.op_start > c.end_ns AND c.end_ns - c.ts_ns >= 10000
               AND c.end_ns - g.end_ns <= 5000 AND g.ts_ns <= c.ts_ns + 5000 AS full_queue
    FROM calls c ASOF LEFT JOIN ends g ON g.rank = c.rank AND c.end_ns >= g.end_ns),
k AS (SELECT rank, ts_ns, row_number() OVER (PARTITION BY rank ORDER BY ts_ns, event_index) AS pos FROM gpu_kernels),
cand AS (SELECT * FROM held WHERE full_queue),
deep AS (  -- the rank's GPU ops that start from the call's start to its own op's: queued ahead of it
    SELECT c.rank, c.event_index, b.pos - a.pos AS ahead
    FROM cand c ASOF JOIN k a ON a.rank = c.rank AND a.ts_ns >= c.ts_ns
    ASOF JOIN k b ON b.rank = c.rank AND b.ts_ns >= c.op_start),
runs AS (  -- a full queue holds launch after launch: one alone is a slow call that ended by chance as an op did
    SELECT *, coalesce(lag(queued) OVER w, false) OR coalesce(lead(queued) OVER w, false) AS in_run
    FROM (SELECT h.*, coalesce(h.full_queue AND d.ahead >= 8, false) AS queued
          FROM held h LEFT JOIN deep d ON d.rank = h.rank AND d.event_index = h.event_index
          WHERE h.name ILIKE '%launch%')
    WINDOW w AS (PARTITION BY rank, pid, tid ORDER BY ts_ns, event_index))
SELECT h.rank, h.event_index, h.name, h.pid, h.tid, h.ts_ns, h.end_ns,
       CASE WHEN h.op_end IS NOT NULL AND h.op_end <= h.end_ns AND h.name NOT ILIKE '%launch%' THEN h.op_index
            WHEN h.is_sync THEN h.g_index
            WHEN r.queued AND r.in_run THEN h.g_index END AS wait_index
FROM held h LEFT JOIN runs r ON r.rank = h.rank AND r.event_index = h.event_index;
