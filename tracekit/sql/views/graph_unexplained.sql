-- graph_unexplained: per rank and step, the time its GPU ops waited for something the trace does not
-- record: a GPU op's slack (its measured start minus the latest of its predecessors' ends + edge gaps,
-- graph_edges) beyond 50 us (a launch's latency and a queued op's own overhead stay within it: p99 about
-- 20 us on the shared traces). The replay keeps the 50 us and not the rest (tracekit/graph/model.py,
-- SLACK_CAP_NS: the same rule), so this is the time a replay of the step cannot reproduce.
-- @stage view
-- @uses graph_nodes, graph_edges
-- @column rank: global rank
-- @column step: ProfilerStep number
-- @column ops: GPU ops that waited beyond their allowance, count
-- @column unexplained_ns: their waiting beyond it, summed, ns
-- @column worst_ns: the longest of them, ns
-- @column worst_name: the op that waited longest
CREATE OR REPLACE VIEW graph_unexplained AS
WITH n AS MATERIALIZED (SELECT node_id, rank, step, kind, name, ts_ns, ts_ns + dur_ns AS end_ns FROM graph_nodes),
ready AS (
    SELECT e.dst, max(s.end_ns + e.gap_ns) AS ready_ns
    FROM graph_edges e JOIN n s ON s.node_id = e.src GROUP BY e.dst),
slack AS (
    SELECT n.rank, n.step, n.name, n.ts_ns - r.ready_ns - 50000 AS excess_ns
    FROM n JOIN ready r ON r.dst = n.node_id
    WHERE n.kind IN ('kernel', 'memory', 'comm', 'arrive') AND n.step IS NOT NULL)
SELECT rank, step, count(*) AS ops, sum(excess_ns) AS unexplained_ns, max(excess_ns) AS worst_ns,
       arg_max(name, excess_ns) AS worst_name
FROM slack WHERE excess_ns > 0
GROUP BY rank, step;
