"""A run's dependency graph read from its views (graph_nodes, graph_edges), and its replay."""

from __future__ import annotations

from .model import Graph, Replay


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
