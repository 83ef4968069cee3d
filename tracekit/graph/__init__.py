"""The step as a graph: the run's dependency graph (views graph_nodes, graph_edges), its replay and its
critical path. API (docs/architecture.md, "The step as a graph"):

    g = tracekit.graph.build(run)                 # Graph: numpy arrays of nodes and edges
    r = tracekit.graph.replay(run)                # Replay with the measured durations (or replay(g))
    r.start_ns, r.end_ns                          # per node, replayed (aligned clock, ns)
    r.steps()                                     # rank, step, measured_ms, replayed_ms, error_pct
    r2 = r.counterfactual(durations=d, gaps=gp, remove=mask)   # another replay of the same graph
"""

from __future__ import annotations

from .engine import simulate, topological_order
from .model import EDGE_KINDS, Graph, Replay

__all__ = ["EDGE_KINDS", "Graph", "Replay", "build", "replay", "simulate", "topological_order"]


def build(run) -> Graph:
    """The run's dependency graph, from its views graph_nodes and graph_edges (computed on first use; the
    run is not written)."""
    nodes = run.sql("SELECT node_id, rank, step, kind, name, cause, ts_ns, dur_ns FROM graph_nodes")
    edges = run.sql("SELECT src, dst, kind, gap_ns FROM graph_edges")
    return Graph.from_tables(nodes, edges)


def replay(run_or_graph, durations=None, gaps=None, remove=None) -> Replay:
    """A replay of a run's graph (or of a Graph) with the measured durations, or the ones given."""
    g = run_or_graph if isinstance(run_or_graph, Graph) else build(run_or_graph)
    return g.replay(durations=durations, gaps=gaps, remove=remove)
