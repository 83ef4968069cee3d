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
from .from_run import build, replay
from .model import EDGE_KINDS, Graph, Replay

__all__ = ["EDGE_KINDS", "Graph", "Replay", "build", "replay", "simulate", "topological_order"]
