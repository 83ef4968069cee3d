-- graph_nodes: the nodes of the step's dependency graph, every rank (docs/definitions.md, "The step as a
-- graph"). On a CPU thread: each ProfilerStep's start and end (markers of no duration), the runtime
-- calls of _graph_calls (a blocking call is two nodes: the call, of no duration, and its wait for the
-- GPU, from the later of the call's start and the awaited op's end to the call's end) and the Gloo ops.
-- On a GPU stream: every kernel, memcpy and memset. A collective kernel or Gloo op of a matched instance
-- (collective_waits; two ranks or more, not unaligned) is two nodes: its arrival (no duration, at its
-- start; a Gloo send or recv: its issuing c10d op's start) and its transfer (from the instance's last
-- arrival to its own end), joined through one hub node per instance. Times are on the aligned clock
-- (rank_clocks), so that ranks compare.
-- @stage view
-- @uses steps, events, gpu_kernels, comm_ops, _graph_calls, collectives, collective_waits, collective_instances, rank_clocks, tk_kernel_families
-- @column node_id: the node's key: rank × 2^40 + event_index × 4 + piece for a node of an event; a hub: minus the instance's number
-- @column rank: global rank (a hub: NULL)
-- @column step: ProfilerStep number the node belongs to (a GPU op: its launch's step; a hub: its instance's first rank's step); NULL outside steps
-- @column kind: the row's kind: step_start, step_end, call, sync, gloo, kernel, memory, comm, arrive, transfer or hub
-- @column name: the event's name (a hub: its instance key)
-- @column chain: the timeline the node runs on: cpu/PID/TID, gpu/DEVICE/STREAM, or hub
-- @column ts_ns: start, ns (aligned clock)
-- @column dur_ns: duration, ns
-- @column cause: what the time is on a critical path (the node's own): launch/CPU, compute: FAMILY, comm transfer, or NULL (no duration)
-- @column event_index: index of the event of the node in its trace's traceEvents (a hub: NULL)
-- @column piece: 0 the event (or a blocking call's call, a collective's arrival), 1 a step's end, a blocking call's wait or a collective's transfer
-- @column order_ns: the node's place on its chain, ns (trace clock; a hub: NULL)
CREATE OR REPLACE VIEW graph_nodes AS
WITH matched AS (
    SELECT w.rank, w.event_index, w.instance_key, w.end_ns AS end_al,
           dense_rank() OVER (ORDER BY w.instance_key) AS hub
    FROM collective_waits w JOIN collective_instances i ON i.instance_key = w.instance_key
    WHERE i.ranks_present >= 2 AND i.status <> 'unaligned'),
fam AS (
    SELECT n.name, arg_min(f.family, f.rule_order) AS family
    FROM (SELECT DISTINCT name FROM gpu_kernels WHERE kind = 'compute') n
    JOIN tk_kernel_families f ON n.name ILIKE f.pattern ESCAPE '\'
    GROUP BY n.name),
stepev AS (
    SELECT s.rank, s.step, e.event_index, e.pid, e.tid, s.ts_ns, s.end_ns
    FROM steps s JOIN events e ON e.rank = s.rank AND e.ph = 'X' AND e.ts_ns = s.ts_ns
                               AND e.name = 'ProfilerStep#' || s.step),
gloo0 AS (SELECT c.rank, c.event_index, o.pid, o.tid, c.ts_ns, c.end_ns, c.kernel_name AS name, c.step,
                 c.comm_kind, c.collective
          FROM collectives c JOIN comm_ops o ON o.rank = c.rank AND o.event_index = c.event_index
          WHERE c.library = 'gloo'),
issuing AS (SELECT rank, tid, ts_ns AS op_ts, end_ns AS op_end,
                   CASE WHEN name = 'c10d::send' THEN 'send' ELSE 'recv' END AS collective
            FROM comm_ops WHERE name IN ('c10d::send', 'c10d::recv_', 'c10d::recv_any_source_')),
gloo AS (  -- a Gloo send or recv arrives when the c10d op of its kind that holds its record's start (or ends
           -- within 50 us before it) starts: the op posts the buffer, and PyTorch opens the gloo:send/recv
           -- record only as the op returns (docs/definitions.md); without one, the record's start
    SELECT g.*, CASE WHEN g.comm_kind = 'p2p' AND i.op_end >= g.ts_ns - 50000 THEN i.op_ts ELSE g.ts_ns END AS arr_ns
    FROM gloo0 g ASOF LEFT JOIN issuing i ON i.rank = g.rank AND i.tid = g.tid AND i.collective = g.collective
                                          AND i.op_ts <= g.ts_ns),
waited AS (SELECT c.*, g.end_ns AS g_end FROM _graph_calls c
           LEFT JOIN gpu_kernels g ON c.wait_index IS NOT NULL AND g.rank = c.rank AND g.event_index = c.wait_index),
raw AS (  -- nodes on the trace clock: (rank, event_index, part, step, kind, name, chain, t0, t1, cause, order_ns)
    SELECT rank, event_index, 0 AS part, step, 'step_start' AS kind, 'ProfilerStep#' || step AS name,
           'cpu/' || pid || '/' || tid AS chain, ts_ns AS t0, ts_ns AS t1, 'launch/CPU' AS cause, ts_ns AS order_ns
    FROM stepev
    UNION ALL
    SELECT rank, event_index, 1, step, 'step_end', 'ProfilerStep#' || step, 'cpu/' || pid || '/' || tid,
           end_ns, end_ns, 'launch/CPU', end_ns FROM stepev

    UNION ALL
    SELECT rank, event_index, 0, NULL, 'call', name, 'cpu/' || pid || '/' || tid, ts_ns,
           CASE WHEN wait_index IS NULL THEN end_ns ELSE ts_ns END, 'launch/CPU', ts_ns FROM waited
    UNION ALL
    SELECT rank, event_index, 1, NULL, 'sync', name, 'cpu/' || pid || '/' || tid, greatest(ts_ns, g_end),
           end_ns, 'launch/CPU', ts_ns FROM waited WHERE wait_index IS NOT NULL
    UNION ALL
    SELECT g.rank, g.event_index, 0, g.step, CASE WHEN m.hub IS NOT NULL THEN 'arrive' ELSE 'gloo' END, g.name,
           'cpu/' || g.pid || '/' || g.tid, CASE WHEN m.hub IS NOT NULL THEN g.arr_ns ELSE g.ts_ns END,
           CASE WHEN m.hub IS NOT NULL THEN g.arr_ns ELSE g.end_ns END,
           'comm transfer', CASE WHEN m.hub IS NOT NULL THEN g.arr_ns ELSE g.ts_ns END
    FROM gloo g LEFT JOIN matched m ON m.rank = g.rank AND m.event_index = g.event_index
    UNION ALL
    SELECT k.rank, k.event_index, 0, k.step,
           CASE WHEN m.hub IS NOT NULL THEN 'arrive' WHEN k.kind = 'comm' THEN 'comm'
                WHEN k.kind = 'memory' THEN 'memory' ELSE 'kernel' END,
           k.name, 'gpu/' || k.device || '/' || k.stream, k.ts_ns,
           CASE WHEN m.hub IS NOT NULL THEN k.ts_ns ELSE k.end_ns END,
           CASE WHEN k.kind = 'comm' THEN 'comm transfer' WHEN k.kind = 'memory' THEN 'compute: memory'
                ELSE 'compute: ' || coalesce(f.family, 'other') END, k.ts_ns
    FROM gpu_kernels k LEFT JOIN matched m ON m.rank = k.rank AND m.event_index = k.event_index
    LEFT JOIN fam f ON f.name = k.name),
placed AS (  -- CPU nodes take the step whose CPU span holds them
    SELECT r.rank, r.event_index, r.part, coalesce(r.step, CASE WHEN r.kind IN ('call', 'sync')
                AND tk_in_span(r.order_ns, st.ts_ns, st.end_ns) THEN st.step END) AS step,
           r.kind, r.name, r.chain, r.t0, r.t1, r.cause, r.order_ns
    FROM raw r ASOF LEFT JOIN steps st ON st.rank = r.rank AND r.order_ns >= st.ts_ns),
aligned AS (
    SELECT p.rank * 1099511627776 + p.event_index * 4 + p.part AS node_id, p.rank, p.step, p.kind, p.name, p.chain,
           tk_aligned(p.t0, c.offset_ns, c.drift_ppm, c.ref_ns) AS ts_ns,
           tk_aligned(p.t1, c.offset_ns, c.drift_ppm, c.ref_ns) - tk_aligned(p.t0, c.offset_ns, c.drift_ppm, c.ref_ns) AS dur_ns,
           CASE WHEN p.t1 > p.t0 THEN p.cause END AS cause, p.event_index, p.part AS piece, p.order_ns
    FROM placed p JOIN rank_clocks c ON c.rank = p.rank),
arrived AS (  -- each matched op with its instance's last arrival (the arrive nodes'; aligned clock)
    SELECT m.*, a.step, a.name, a.chain, a.order_ns, max(a.ts_ns) OVER (PARTITION BY m.hub) AS last_ns
    FROM matched m JOIN aligned a ON a.node_id = m.rank * 1099511627776 + m.event_index * 4)
SELECT * FROM aligned
UNION ALL
SELECT rank * 1099511627776 + event_index * 4 + 1, rank, step, 'transfer', name, chain,
       last_ns, greatest(end_al - last_ns, 0), 'comm transfer', event_index, 1, order_ns
FROM arrived
UNION ALL
SELECT -hub, NULL, min(step), 'hub', any_value(instance_key), 'hub', max(last_ns), 0, NULL, NULL, 0, NULL
FROM arrived
GROUP BY hub;
