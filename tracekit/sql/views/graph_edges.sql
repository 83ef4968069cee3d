-- graph_edges: the dependencies between graph_nodes (docs/definitions.md, "The step as a graph"). A node
-- starts at the latest of its predecessors' ends, each plus the edge's gap; the gap is the time the
-- trace shows between them that no node holds.
--   thread: consecutive nodes of a CPU thread; gap: the measured time between them (CPU work the graph
--           keeps no node for), 0 into a blocking call's wait and a Gloo op's transfer. Also (inferred) a
--           Gloo op on a worker thread after the latest node of its rank's step thread (the thread of
--           its ProfilerSteps) that started by then: the op was enqueued by that thread's work. A CPU op
--           that starts while the Gloo op before it on its thread is still in its transfer (isend/irecv,
--           asynchronous) follows that op's arrival instead, and the first node of the thread that starts
--           after the transfer ended follows the transfer's end (gap 0: a bound; the thread's own time is on
--           the edge from its previous node)
--   stream: consecutive ops of a GPU stream; gap 0
--   launch: a runtime call -> the GPU op of its correlation id; gap: the op may start from the call's end,
--           or as early as it did where it started before the call returned (gap op start - call end, at
--           least minus the call's duration: from the call's start). From the call's start always, the
--           idle of a GPU waiting for a 20 us launch was kept on the stream edge as unexplained slack: a
--           launch-bound step replayed with the host free kept it (0.057 of a hand-worked ~0.44 ms saved)
--   sync:   the GPU op a blocking call waited for -> the call's wait; gap 0. A device-wide synchronize
--           waits for the last op (by the call's end, launched before it) of every stream of its device
--   wait:   cross-stream. Where a rank's trace has cuda_sync 'Stream Wait Event's (recorded with
--           enable_cuda_sync_events), from them: the first op of the waiting stream launched after the wait
--           call (correlation ids) waits for the last op of wait_on_stream launched before the cudaEventRecord
--           of wait_on_cuda_event_record_corr_id. Otherwise inferred (the trace records cudaStreamWaitEvent
--           but not which event): a GPU op whose
--           launch follows one or more cudaStreamWaitEvent calls on its thread since that thread's previous
--           launch waits for the op launched last before each such call on each other stream of the
--           rank (the op an event recorded just before the call captures) or, where that op ended after
--           the waiting op started (the event was recorded earlier: an asynchronous collective waited for
--           later), the last op of that stream that had ended by then; gap 0
--   collective: a matched instance's arrivals -> its hub -> its transfers (no rank's transfer starts before
--           the last rank arrives); gap 0
-- @stage view
-- @uses graph_nodes, events, gpu_kernels, _graph_calls, collective_waits
-- @column src: node_id of the predecessor
-- @column dst: node_id of the successor
-- @column kind: the row's kind: thread, stream, launch, sync, wait or collective
-- @column gap_ns: the edge's gap: dst may start no earlier than src's end + gap_ns, ns
CREATE OR REPLACE VIEW graph_edges AS
WITH nodes AS MATERIALIZED (SELECT *, piece AS part FROM graph_nodes),
chained AS MATERIALIZED (
    SELECT n.node_id, n.kind, n.part, n.ts_ns, n.ts_ns + n.dur_ns AS end_ns, n.chain, n.rank,
           lag(n.node_id) OVER w AS prev_id, lag(n.ts_ns + n.dur_ns) OVER w AS prev_end, lag(n.kind) OVER w AS prev_kind,
           lag(coalesce(cw.end_ns, n.ts_ns + n.dur_ns)) OVER w AS prev_own_end,
           lag(n.node_id, 2) OVER w AS prev2_id, lag(n.ts_ns + n.dur_ns, 2) OVER w AS prev2_end
    FROM nodes n LEFT JOIN collective_waits cw
         ON n.kind = 'transfer' AND n.chain LIKE 'cpu/%' AND cw.rank = n.rank AND cw.event_index = n.event_index
    WHERE n.kind <> 'hub'
    WINDOW w AS (PARTITION BY n.rank, n.chain ORDER BY n.order_ns, n.kind <> 'step_end', n.kind <> 'step_start',
                 n.event_index, n.part)),
threaded AS (  -- an op that starts while the Gloo op before it on its thread is still running by that op's own
               -- clock (asynchronous isend/irecv on one thread) follows that op's arrival, not its end; an op
               -- that ended before (a blocking send whose peer's arrival the clocks place a little after its
               -- end) holds the thread until its transfer's end
    SELECT CASE WHEN async THEN prev2_id ELSE prev_id END AS src, node_id AS dst, kind, part, chain,
           ts_ns - CASE WHEN async THEN prev2_end ELSE prev_end END AS gap
    FROM (SELECT *, chain LIKE 'cpu/%' AND prev_kind = 'transfer' AND prev_own_end > ts_ns AS async FROM chained)
    WHERE prev_id IS NOT NULL),
completed AS (  -- ... and the first node of its thread that starts after it ended follows its end
    SELECT t.node_id AS src, n.node_id AS dst, n.ts_ns - t.end_ns AS gap
    FROM (SELECT * FROM chained WHERE kind = 'transfer' AND chain LIKE 'cpu/%') t
    ASOF JOIN chained n ON n.rank = t.rank AND n.chain = t.chain AND t.end_ns < n.ts_ns  -- (not itself: dur 0)
    WHERE n.node_id NOT IN (SELECT dst FROM threaded WHERE src = t.node_id)),
first_call AS (
    SELECT rank, correlation, arg_min(event_index, ts_ns) AS event_index
    FROM events WHERE ph = 'X' AND correlation IS NOT NULL AND NOT tk_gpu_cat(cat)
    GROUP BY rank, correlation),
launched AS (  -- every GPU op with its launching call, on the trace clock
    SELECT g.rank, g.event_index, g.device, g.stream, g.ts_ns AS op_ts, g.end_ns AS op_end,
           c.event_index AS call_index, e.pid, e.tid, e.ts_ns AS call_ts
    FROM gpu_kernels g JOIN first_call c ON c.rank = g.rank AND c.correlation = g.correlation
    JOIN events e ON e.rank = c.rank AND e.event_index = c.event_index),
recorded AS (  -- cuda_sync 'Stream Wait Event's (enable_cuda_sync_events): the waiting stream, its wait call's
               -- correlation id, the stream waited on and the correlation id of the cudaEventRecord
    SELECT rank, pid AS device, stream, correlation AS w_corr,
           TRY_CAST(json_extract_string(args, '$.wait_on_stream') AS BIGINT) AS src_stream,
           TRY_CAST(json_extract_string(args, '$.wait_on_cuda_event_record_corr_id') AS BIGINT) AS rec_corr
    FROM events WHERE ph = 'X' AND cat = 'cuda_sync' AND name = 'Stream Wait Event' AND correlation IS NOT NULL),
-- per launch (correlation id) and stream, its first and its last op: one call can launch many (a CUDA graph's
-- cudaGraphLaunch: every kernel of the graph shares its correlation id), and the ASOF joins below take one
-- row per key: a tie among a graph's kernels picked any of them (a wait for the graph's last kernel held by
-- its first, the rest of the wait unexplained: -32 % on a hand-built timeline)
k AS (SELECT rank, device, stream, correlation, arg_min(event_index, ts_ns) AS first_index,
             arg_max(event_index, ts_ns) AS last_index
      FROM gpu_kernels WHERE correlation IS NOT NULL GROUP BY rank, device, stream, correlation),
recorded_waits AS (  -- the first op of the waiting stream launched after the wait call waits for the last op of
                     -- the stream waited on launched before the event was recorded
    SELECT d.rank, d.first_index AS event_index, sr.last_index AS src_index
    FROM recorded r
    ASOF JOIN k d ON d.rank = r.rank AND d.device = r.device AND d.stream = r.stream AND r.w_corr < d.correlation
    ASOF JOIN k sr ON sr.rank = r.rank AND sr.device = r.device AND sr.stream = r.src_stream AND r.rec_corr > sr.correlation),
prev_launch AS (
    SELECT *, lag(call_ts) OVER (PARTITION BY rank, pid, tid ORDER BY call_ts, event_index) AS prev_ts
    FROM launched),
waits AS (
    SELECT rank, pid, tid, ts_ns FROM events
    WHERE ph = 'X' AND cat IN ('cuda_runtime', 'cuda_driver') AND name ILIKE '%StreamWaitEvent%'),
waiting AS (  -- (waiting op, the wait call's time): the calls since its thread's previous launch
    SELECT l.rank, l.event_index, l.device, l.stream, l.op_ts, w.ts_ns AS w_ts
    FROM prev_launch l JOIN waits w ON w.rank = l.rank AND w.pid = l.pid AND w.tid = l.tid
         AND w.ts_ns < l.call_ts AND (l.prev_ts IS NULL OR w.ts_ns > l.prev_ts)
    WHERE l.rank NOT IN (SELECT rank FROM recorded)),
streams AS (SELECT DISTINCT rank, device, stream FROM launched),
cand AS (SELECT w.rank, w.event_index, w.w_ts, w.op_ts, s.device, s.stream
         FROM waiting w JOIN streams s ON s.rank = w.rank AND s.device = w.device AND s.stream <> w.stream),
last_of_call AS (  -- per launch call and stream, the op it launched last (a CUDA graph's: its last kernel)
    SELECT rank, device, stream, call_ts, max(op_ts) AS op_ts, arg_max(event_index, op_ts) AS event_index
    FROM launched GROUP BY rank, device, stream, call_index, call_ts),
by_launch AS (  -- per (waiting op, wait call, other stream): the op launched last on it before the call
    SELECT c.*, l.op_ts AS a_ts, l.event_index AS a_index
    FROM cand c ASOF JOIN last_of_call l ON l.rank = c.rank AND l.device = c.device AND l.stream = c.stream
         AND c.w_ts > l.call_ts),
waited AS (  -- ... or, when that one ended after the waiting op started, the last one that had ended by then
    SELECT b.rank, b.event_index, CASE WHEN l.op_ts < b.a_ts THEN l.event_index ELSE b.a_index END AS src_index
    FROM by_launch b ASOF JOIN launched l ON l.rank = b.rank AND l.device = b.device AND l.stream = b.stream
         AND b.op_ts >= l.op_end),
main AS (SELECT DISTINCT rank, chain FROM nodes WHERE kind = 'step_start'),
on_main AS (SELECT n.rank, n.node_id, n.ts_ns, n.ts_ns + n.dur_ns AS end_ns FROM nodes n
            JOIN main m ON m.rank = n.rank AND m.chain = n.chain),
enqueued AS (  -- a Gloo op on a worker thread follows the rank's step thread: its latest node started by then
    SELECT m.node_id AS src, n.node_id AS dst, n.ts_ns - m.end_ns AS gap_ns
    FROM nodes n ASOF JOIN on_main m ON m.rank = n.rank AND n.ts_ns >= m.ts_ns
    WHERE n.kind IN ('arrive', 'gloo') AND n.chain LIKE 'cpu/%'
      AND n.chain NOT IN (SELECT chain FROM main WHERE main.rank = n.rank)),
last_part AS (SELECT node_id, rank, event_index, max(part) OVER (PARTITION BY rank, event_index) AS top, part
              FROM nodes WHERE kind <> 'hub'),
-- a device-wide synchronize (cudaDeviceSynchronize, cuCtxSynchronize, their HIP twins) waits for every
-- stream: on each stream of the rank's device, the op that ended last by the call's end, launched before
-- the call began (_graph_calls gives one op, the last to end: a device sync then seemed to wait for one
-- stream, and hiding that stream's work freed it while another stream still ran)
device_syncs AS (SELECT rank, event_index, ts_ns, end_ns FROM _graph_calls
                 WHERE wait_index IS NOT NULL AND (name ILIKE '%DeviceSynchronize%' OR name ILIKE '%CtxSynchronize%')),
sync_streams AS (SELECT d.*, s.device, s.stream FROM device_syncs d
                 JOIN (SELECT DISTINCT rank, device, stream FROM gpu_kernels) s ON s.rank = d.rank),
device_waited AS (
    SELECT d.rank, d.event_index, g.event_index AS src_index
    FROM sync_streams d ASOF JOIN (SELECT rank, device, stream, end_ns, event_index, launch_ts_ns FROM gpu_kernels) g
         ON g.rank = d.rank AND g.device = d.device AND g.stream = d.stream AND d.end_ns >= g.end_ns
    WHERE g.launch_ts_ns < d.ts_ns)
SELECT src, dst, CASE WHEN chain LIKE 'cpu/%' THEN 'thread' ELSE 'stream' END AS kind,
       CASE WHEN chain LIKE 'cpu/%' AND NOT (part = 1 AND kind IN ('sync', 'transfer')) THEN gap ELSE 0 END AS gap_ns
FROM threaded
UNION ALL
SELECT src, dst, 'thread', 0 FROM completed  -- (a bound only: the thread's own time is on its threaded edge)
UNION ALL
SELECT src, dst, 'thread', gap_ns FROM enqueued
UNION ALL
SELECT l.rank * 1099511627776 + l.call_index * 4, l.rank * 1099511627776 + l.event_index * 4, 'launch',
       greatest(-n.dur_ns, least(0, k.ts_ns - (n.ts_ns + n.dur_ns)))
FROM launched l JOIN nodes n ON n.node_id = l.rank * 1099511627776 + l.call_index * 4
JOIN nodes k ON k.node_id = l.rank * 1099511627776 + l.event_index * 4
UNION ALL
SELECT DISTINCT p.node_id, c.rank * 1099511627776 + c.event_index * 4 + 1, 'sync', 0
FROM (SELECT rank, event_index, wait_index FROM _graph_calls
      UNION ALL SELECT rank, event_index, src_index FROM device_waited) c
JOIN last_part p ON p.rank = c.rank AND p.event_index = c.wait_index AND p.part = p.top
UNION ALL
SELECT DISTINCT p.node_id, w.rank * 1099511627776 + w.event_index * 4, 'wait', 0
FROM (SELECT rank, event_index, src_index FROM waited UNION ALL SELECT * FROM recorded_waits) w
JOIN last_part p ON p.rank = w.rank AND p.event_index = w.src_index AND p.part = p.top
UNION ALL
SELECT x.src, x.dst, 'collective', 0 FROM (
    SELECT a.node_id AS src, h.node_id AS dst, a.node_id + 1 AS transfer
    FROM collective_waits w JOIN nodes h ON h.kind = 'hub' AND h.name = w.instance_key
    JOIN nodes a ON a.kind = 'arrive' AND a.node_id = w.rank * 1099511627776 + w.event_index * 4) x
UNION ALL
SELECT h.node_id, w.rank * 1099511627776 + w.event_index * 4 + 1, 'collective', 0
FROM collective_waits w JOIN nodes h ON h.kind = 'hub' AND h.name = w.instance_key;
