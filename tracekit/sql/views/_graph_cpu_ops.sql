-- _graph_cpu_ops: the CPU operators the dependency graph keeps as nodes: each top-level cpu_op of a thread
-- (no earlier op of its thread still running when it starts: nesting handled by keeping the outermost) that
-- holds none of the graph's other CPU nodes (a runtime call of _graph_calls, a Gloo op): an op that holds
-- some is represented by them and the gaps between them. Gloo ops are nodes of their own.
-- @stage view
-- @uses events, _graph_calls, comm_ops, gpu_kernels
-- @column rank: global rank
-- @column event_index: the op's index in its trace's traceEvents
-- @column pid: process id
-- @column tid: thread id
-- @column name: the op's name
-- @column ts_ns: start, ns (trace clock)
-- @column end_ns: end, ns (trace clock)
-- @column cause: launch/CPU on a rank with GPU ops (the CPU's work around its launches), compute: cpu on a rank without (a Gloo rank computes on its CPU)
CREATE OR REPLACE VIEW _graph_cpu_ops AS
WITH ops AS (
    SELECT rank, event_index, pid, tid, name, ts_ns, ts_ns + coalesce(dur_ns, 0) AS end_ns,
           max(ts_ns + coalesce(dur_ns, 0)) OVER (PARTITION BY rank, pid, tid ORDER BY ts_ns, event_index
                                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_end
    FROM events WHERE ph = 'X' AND cat = 'cpu_op'),
top AS (SELECT * FROM ops WHERE (before_end IS NULL OR ts_ns >= before_end) AND name NOT LIKE 'gloo:%'),
kept AS (
    SELECT rank, pid, tid, ts_ns FROM _graph_calls
    UNION ALL
    SELECT rank, pid, tid, ts_ns FROM comm_ops WHERE name LIKE 'gloo:%'),
holding AS (
    SELECT DISTINCT t.rank, t.event_index
    FROM kept k ASOF JOIN top t ON t.rank = k.rank AND t.pid = k.pid AND t.tid = k.tid AND k.ts_ns >= t.ts_ns
    WHERE k.ts_ns < t.end_ns),
gpu_ranks AS (SELECT DISTINCT rank FROM gpu_kernels)
SELECT t.rank, t.event_index, t.pid, t.tid, t.name, t.ts_ns, t.end_ns,
       CASE WHEN t.rank IN (SELECT rank FROM gpu_ranks) THEN 'launch/CPU' ELSE 'compute: cpu' END AS cause
FROM top t ANTI JOIN holding h ON h.rank = t.rank AND h.event_index = t.event_index;
