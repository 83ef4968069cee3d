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


def path_replay(run) -> Replay:
    """The replay the critical path walks. On a run of CPU ranks (no GPU op: Gloo), of the graph whose step
    threads are split (graph/split.py), so that a thread's time between recorded ops is its work, host
    idle, or waiting held by the collective it waited for, and the path follows that wait to the rank that
    arrived last: on the unsplit graph a CPU rank's wait inside an unrecorded call is a fixed gap on the
    waiting rank (the planted delay's path blamed the rank that waited). On GPU runs too: a step thread's
    stretch with no op (a data loader's stall) is host idle on the path, not 'launch/CPU' (CPU between the
    graph's nodes), as advise and bound call it."""
    from .split import split

    return split(run).replay()
