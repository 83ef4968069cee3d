"""The step's dependency graph of a run (the views graph_nodes and graph_edges) and its replays.

``Graph`` holds the nodes and edges as numpy arrays; ``Graph.replay`` simulates it (engine.py) with the
measured durations, or with others (a counterfactual), and returns a ``Replay``. Each edge's gap is its
fixed gap (graph_edges.gap_ns) plus the node's slack: the time between the latest of its predecessors'
ends (+ gaps) and its measured start, which the trace shows but no dependency explains; it is kept on the
edge that set the start, so that a replay with the measured durations gives back the measured times
wherever the edges hold. Nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from . import engine as sim

EDGE_KINDS = ("thread", "stream", "launch", "sync", "wait", "collective")
GPU_KINDS = ("kernel", "memory", "comm", "arrive")
# a GPU op's slack (measured start - latest predecessor end + gap) kept up to this: a launch's latency and
# a queued op's own overhead (p99 20 us on the shared traces); beyond it the op waited for something the
# trace does not record, which the replay does not invent (the same rule in sql/views/graph_unexplained.sql)
SLACK_CAP_NS = 50_000


@dataclass(frozen=True, eq=False)
class Graph:
    """Nodes (one entry per node, position = index) and edges (src/dst are node positions)."""
    node_id: np.ndarray
    rank: np.ndarray      # int64, -1 for a hub
    step: np.ndarray      # int64, -1 outside steps
    kind: np.ndarray      # str
    name: np.ndarray      # str
    cause: np.ndarray     # str ('' for a node of no duration)
    ts_ns: np.ndarray     # measured start (aligned clock)
    dur_ns: np.ndarray    # measured duration
    src: np.ndarray
    dst: np.ndarray
    edge_kind: np.ndarray  # str
    gap_ns: np.ndarray     # fixed gap (graph_edges.gap_ns)
    slack_ns: np.ndarray = field(init=False)   # the measured slack kept on the edge that set the start
    unexplained_ns: np.ndarray = field(init=False)  # per node: a GPU op's slack beyond SLACK_CAP_NS
    dropped: int = field(init=False)           # edges dropped to break a cycle (times contradicting them)
    order: np.ndarray = field(init=False)
    ptr: np.ndarray = field(init=False)
    by: np.ndarray = field(init=False)

    def __post_init__(self):
        n = len(self.ts_ns)
        set_ = object.__setattr__
        # the edges in an order of their own (by destination's id, source's id, kind), not the order of the
        # run's rows: where two edges set a node's start at the same instant, the first wins (the critical
        # path's walk, and the edge that keeps the node's slack), and the rows' order changed with the
        # run's layout (a folder per rank against packed events) and with DuckDB's threads
        if len(self.src):
            _, kcode = np.unique(np.asarray(self.edge_kind, dtype=object).astype(str), return_inverse=True)
            canon = np.lexsort((kcode, self.node_id[self.src], self.node_id[self.dst]))
            for name in ("src", "dst", "edge_kind", "gap_ns"):
                set_(self, name, np.asarray(getattr(self, name))[canon])
        hint = np.lexsort((self.node_id, _kind_rank(self.kind), self.ts_ns))
        try:
            order = sim.topological_order(n, self.src, self.dst, hint)
            dropped = 0
        except sim.CycleError:  # a cycle: drop the edges on cycles that go back in measured time (clocks
            # that disagree); an edge back in time elsewhere (a blocking send whose peer's arrival the
            # clocks place just after the send's end) is kept: it holds what follows
            pos = np.empty(n, dtype=np.int64)
            pos[hint] = np.arange(n)
            forward = pos[self.src] < pos[self.dst]
            cyc = sim.on_cycles(n, self.src, self.dst)
            keep = forward | ~(cyc[self.src] & cyc[self.dst])
            try:
                order = sim.topological_order(n, self.src[keep], self.dst[keep], hint)
            except sim.CycleError:  # (not expected: every cycle lies within cyc) every edge back in time
                keep, order = forward, hint
            dropped = int((~keep).sum())
            for name in ("src", "dst", "edge_kind", "gap_ns"):
                set_(self, name, getattr(self, name)[keep])
        set_(self, "order", order)
        set_(self, "dropped", dropped)
        ptr, by = sim.in_edges(n, self.dst)
        set_(self, "ptr", ptr)
        set_(self, "by", by)
        end = self.ts_ns + self.dur_ns
        bind = sim.binding(ptr, by, self.src, self.dst, self.gap_ns, self.ts_ns, end)
        has = bind >= 0
        ready = np.full(n, sim.NO_BASE, dtype=np.int64)
        ready[has] = end[self.src[bind[has]]] + self.gap_ns[bind[has]]
        resid = np.where(has, self.ts_ns - ready, 0).clip(min=0)
        kept = np.where(np.isin(self.kind, GPU_KINDS), np.minimum(resid, SLACK_CAP_NS), resid)
        slack = np.zeros(len(self.src), dtype=np.int64)
        slack[bind[has & (kept > 0)]] = kept[has & (kept > 0)]
        set_(self, "slack_ns", slack)
        set_(self, "unexplained_ns", resid - kept)

    def edge_kind_of(self, e: int, r: "Replay") -> str:
        """The kind of edge ``e`` of replay ``r`` (whose edges may be a subset of the graph's)."""
        return self.edge_kind[e] if r.src is self.src else self.edge_kind[r.edge_pos[e]]

    @property
    def nodes(self) -> int:
        return len(self.ts_ns)

    @classmethod
    def from_tables(cls, nodes: pa.Table, edges: pa.Table) -> "Graph":
        """From graph_nodes and graph_edges rows (tests build them inline)."""
        ids = np.asarray(nodes.column("node_id").to_numpy(zero_copy_only=False), dtype=np.int64)
        pos = np.argsort(ids, kind="stable")
        sids = ids[pos]

        def where(col):
            key = np.asarray(edges.column(col).to_numpy(zero_copy_only=False), dtype=np.int64)
            i = np.searchsorted(sids, key)
            ok = (i < len(sids)) & (sids[np.minimum(i, len(sids) - 1)] == key)
            return pos[np.minimum(i, len(sids) - 1)], ok

        s, ok_s = where("src")
        d, ok_d = where("dst")
        ok = ok_s & ok_d

        def ints(t, col, fill):
            return np.asarray(t.column(col).fill_null(fill).to_numpy(zero_copy_only=False), dtype=np.int64)

        def strs(t, col):
            return np.asarray(t.column(col).fill_null("").to_numpy(zero_copy_only=False), dtype=object)

        return cls(node_id=ids, rank=ints(nodes, "rank", -1), step=ints(nodes, "step", -1),
                   kind=strs(nodes, "kind"), name=strs(nodes, "name"), cause=strs(nodes, "cause"),
                   ts_ns=ints(nodes, "ts_ns", 0), dur_ns=ints(nodes, "dur_ns", 0),
                   src=s[ok], dst=d[ok], edge_kind=strs(edges, "kind")[ok], gap_ns=ints(edges, "gap_ns", 0)[ok])

    def replay(self, durations: np.ndarray | None = None, gaps: np.ndarray | None = None,
               remove: np.ndarray | None = None) -> "Replay":
        """Simulate the graph. ``durations``: per node (default: measured); ``gaps``: per edge, the whole gap
        (default: gap_ns + slack_ns); ``remove``: a boolean mask of edges to drop (a node left without
        predecessors starts at its measured start)."""
        dur = self.dur_ns if durations is None else np.asarray(durations, dtype=np.int64)
        gap = self.gap_ns + self.slack_ns if gaps is None else np.asarray(gaps, dtype=np.int64)
        ptr, by, src, dst = self.ptr, self.by, self.src, self.dst
        pos = np.arange(len(src))
        if remove is not None and np.any(remove):
            keep = ~np.asarray(remove, dtype=bool)
            src, dst, gap, pos = src[keep], dst[keep], gap[keep], pos[keep]
            ptr, by = sim.in_edges(self.nodes, dst)
        base = np.where(np.bincount(dst, minlength=self.nodes) > 0, sim.NO_BASE, self.ts_ns)
        start, end = sim.simulate(self.order, ptr, by, src, gap, dur, base)
        return Replay(self, start, end, src, dst, gap, pos)


@dataclass(frozen=True, eq=False)
class Replay:
    """Per node, the replayed start and end (int64 ns, aligned clock), and the edges it was run with."""
    graph: Graph
    start_ns: np.ndarray
    end_ns: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    gap_ns: np.ndarray
    edge_pos: np.ndarray  # per edge of this replay, its position among the graph's edges

    def counterfactual(self, durations=None, gaps=None, remove=None) -> "Replay":
        """The same graph replayed with other durations / gaps / edges (Graph.replay's parameters)."""
        return self.graph.replay(durations=durations, gaps=gaps, remove=remove)

    def binding(self) -> np.ndarray:
        """Per node, the position (in this replay's src/dst) of the edge that set its start; -1: none."""
        ptr, by = sim.in_edges(self.graph.nodes, self.dst)
        return sim.binding(ptr, by, self.src, self.dst, self.gap_ns, self.start_ns, self.end_ns)

    def steps(self) -> pa.Table:
        """One row per (rank, step): the step from the rank's ProfilerStep start to the end of its last work
        of that step, measured and replayed."""
        return step_table(self.graph, self.start_ns, self.end_ns)


def _kind_rank(kind: np.ndarray) -> np.ndarray:
    """Tie-break of equal starts in the order tried first: what comes first at one instant."""
    rank = {"step_end": 0, "step_start": 1, "arrive": 2, "hub": 3, "transfer": 4}
    return np.fromiter((rank.get(k, 5) for k in kind), dtype=np.int64, count=len(kind))


def step_table(g: Graph, start: np.ndarray, end: np.ndarray) -> pa.Table:
    in_step = (g.step >= 0) & (g.rank >= 0)
    first = in_step & (g.kind == "step_start")
    keys = g.rank * (1 << 32) + g.step
    rows = {}
    for i in np.flatnonzero(first):
        rows[int(keys[i])] = [int(g.rank[i]), int(g.step[i]), int(g.ts_ns[i]), int(start[i]), None, None, 0]
    m_end = g.ts_ns + g.dur_ns
    idx = np.flatnonzero(in_step)
    order = np.argsort(keys[idx], kind="stable")
    idx = idx[order]
    k = keys[idx]
    if len(idx):
        cut = np.flatnonzero(np.diff(k)) + 1
        groups = np.split(np.arange(len(idx)), cut)
        for grp in groups:
            key = int(k[grp[0]])
            if key in rows:
                rows[key][4] = int(m_end[idx[grp]].max())
                rows[key][5] = int(end[idx[grp]].max())
                rows[key][6] = int(g.unexplained_ns[idx[grp]].sum())
    out = sorted(rows.values(), key=lambda r: (r[1], r[0]))
    measured = [(r[4] - r[2]) / 1e6 for r in out]
    replayed = [(r[5] - r[3]) / 1e6 for r in out]
    err = [None if m == 0 else round((p - m) / m * 100, 3) for m, p in zip(measured, replayed, strict=True)]
    return pa.table([[r[0] for r in out], [r[1] for r in out], measured, replayed, err, [r[6] / 1e6 for r in out]],
                    schema=STEP_TABLE_SCHEMA)


# the replay report's rows (step_table): per rank and step, measured against replayed
STEP_TABLE_SCHEMA = pa.schema([("rank", pa.int64()), ("step", pa.int64()), ("measured_ms", pa.float64()),
                               ("replayed_ms", pa.float64()), ("error_pct", pa.float64()),
                               ("unexplained_ms", pa.float64())])
