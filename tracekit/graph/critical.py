"""The critical path of each step of a replay: the chain of work that sets the step's end.

Per step: from the node whose replayed end is the step's last (any rank: its CPU step end or a GPU op of
the step), walk back along the edge that set each node's start, down to the step's start (the earliest
rank's ProfilerStep start, or the previous step's last work's end where that is later: the steps' paths
do not overlap). The time is cut into pieces that tile that span exactly: a node's own time
(its cause: launch/CPU, compute: FAMILY, comm transfer) and the gap of the edge that led to it (thread:
launch/CPU, CPU time between the graph's nodes; launch: starved, the GPU waiting for a launch; stream,
wait, sync: idle, a wait the trace does not explain; collective: waiting at a collective). What the walk
does not reach (it stops at a node with no predecessor) is idle.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .model import Replay

GAP_CAUSE = {"thread": "launch/CPU", "launch": "starved", "stream": "idle", "wait": "idle", "sync": "idle",
             "collective": "waiting at a collective",
             # the edges of the split graph (graph/split.py)
             "held": "waiting at a collective", "enqueue": "launch/CPU", "start": "idle",
             "handoff": "launch/CPU", "joined": "launch/CPU"}
GAP_NAME = {"thread": "CPU between ops", "launch": "launch latency", "stream": "gap on the stream",
            "wait": "cross-stream wait", "sync": "synchronize", "collective": "last rank's arrival",
            "held": "the collective's recorded end", "enqueue": "CPU before a Gloo op's enqueue",
            "start": "the rank's later first step",
            "handoff": "CPU before another host thread's first launch (backward() called)",
            "joined": "the step thread resuming after another host thread's last op (backward() returns)"}


def step_spans(r: Replay) -> dict[int, tuple[int, int, int]]:
    """step -> (span start, span end, the node that ends the step), on the replay's times."""
    g = r.graph
    out = {}
    in_step = np.flatnonzero((g.step >= 0) & (g.rank >= 0))
    in_step = in_step[np.argsort(g.step[in_step], kind="stable")]
    cuts = np.flatnonzero(np.diff(g.step[in_step])) + 1
    for idx in np.split(in_step, cuts) if len(in_step) else []:
        starts = idx[g.kind[idx] == "step_start"]
        if not len(starts):
            continue
        # the node that ends last; where several end at that instant, the one of the smallest id (positions
        # follow the order of the run's rows, which changes with its layout)
        ends = r.end_ns[idx]
        tied = idx[ends == ends.max()]
        last = tied[np.argmin(g.node_id[tied])]
        out[int(g.step[idx[0]])] = (int(r.start_ns[starts].min()), int(r.end_ns[last]), int(last))
    # a step whose previous one is profiled begins no sooner than that one's last work ends: a pipeline's
    # later stage starts its step while the first stage still runs the previous one's backward, and that
    # time is on the previous step's path (it was on both: steps of 0.960 ms had paths of 1.160)
    for step in sorted(out):
        if step - 1 in out:
            lo, hi, last = out[step]
            out[step] = (min(max(lo, out[step - 1][1]), hi), hi, last)
    return out


def walk(r: Replay, last: int, lo: int, chain: list | None = None,
         bind: np.ndarray | None = None) -> list[tuple[int, int, int, str, str, int]]:
    """Pieces (start, end, rank, cause, name, node) from node ``last``'s end back to ``lo``, latest first;
    they tile [lo, end of last] (the node of a gap piece: the node after the gap). ``chain``, when given,
    receives the nodes walked, latest first, each a predecessor of the one before it. ``bind``: r.binding(),
    when the caller walks several steps."""
    g = r.graph
    bind = r.binding() if bind is None else bind
    pieces = []
    t = int(r.end_ns[last])
    v = last
    while t > lo:
        if chain is not None:
            chain.append(v)
        s_v = max(int(r.start_ns[v]), lo)
        if s_v < t and g.cause[v]:
            pieces.append((s_v, t, int(g.rank[v]), g.cause[v], g.name[v], v))
            t = s_v
        elif s_v < t:  # a node of no duration cannot span time; clip
            t = s_v
        e = int(bind[v])
        if e < 0 or t <= lo:
            break
        u = int(r.src[e])
        kind = g.edge_kind_of(e, r)
        gap_lo = max(min(int(r.end_ns[u]), t), lo)
        if gap_lo < t:
            rank = int(g.rank[v]) if g.rank[v] >= 0 else int(g.rank[u])
            pieces.append((gap_lo, t, rank, GAP_CAUSE[kind], GAP_NAME[kind], v))
            t = gap_lo
        v = u
    if t > lo:
        pieces.append((lo, t, int(g.rank[v]), "idle", "before the rank's first recorded work", v))
    return pieces


def runs(r: Replay):
    """Per step, in time order: (step, span start, start, end, rank, cause, name) of each run of consecutive
    pieces of one rank and cause, named by its longest piece (+N more)."""
    bind = r.binding()
    for step, (lo, _hi, last) in sorted(step_spans(r).items()):
        merged = []  # [start, end, rank, cause, {name: ns}]
        for a, b, rank, cause, name, _node in reversed(walk(r, last, lo, bind=bind)):
            if merged and merged[-1][2] == rank and merged[-1][3] == cause and merged[-1][1] == a:
                merged[-1][1] = b
            else:
                merged.append([a, b, rank, cause, {}])
            merged[-1][4][name] = merged[-1][4].get(name, 0) + b - a
        for a, b, rank, cause, names in merged:
            top = max(names, key=names.get)
            yield step, lo, a, b, rank, cause, (top if len(names) == 1 else f"{top} (+{len(names) - 1} more)")


def critical_path(r: Replay) -> pa.Table:
    """Rows step, rank, cause, name, ms, ns, start_ms. The path is cut into stretches (consecutive pieces on
    one rank); within a stretch, one row per cause, in the order the causes first appear, named by the
    cause's longest piece (+N more), start_ms its first piece's start after the step's span start. Per step
    the ns add up to the span exactly."""
    cols = {k: [] for k in ("step", "rank", "cause", "name", "ms", "ns", "start_ms")}

    def emit(step, lo, rank, causes):
        for cause, (first, names) in causes.items():
            ns = sum(names.values())
            top = max(names, key=names.get)
            name = top if len(names) == 1 else f"{top} (+{len(names) - 1} more)"
            for k, x in zip(cols, (step, rank, cause, name, ns / 1e6, ns, (first - lo) / 1e6), strict=True):
                cols[k].append(x)

    bind = r.binding()
    for step, (lo, _hi, last) in sorted(step_spans(r).items()):
        rank, causes = None, {}
        for a, b, rk, cause, name, _node in reversed(walk(r, last, lo, bind=bind)):
            if rk != rank and causes:
                emit(step, lo, rank, causes)
                causes = {}
            rank = rk
            first, names = causes.setdefault(cause, (a, {}))
            names[name] = names.get(name, 0) + b - a
        if causes:
            emit(step, lo, rank, causes)
    return pa.table(list(cols.values()), schema=CRITICAL_SCHEMA)


# the critical_path report's rows (critical_path)
CRITICAL_SCHEMA = pa.schema([("step", pa.int64()), ("rank", pa.int64()), ("cause", pa.string()),
                             ("name", pa.string()), ("ms", pa.float64()), ("ns", pa.int64()),
                             ("start_ms", pa.float64())])


def thread_gap_note(rows: list[dict]) -> str | None:
    """Where most of the path is a thread's time between the graph's nodes: say what the path does not name
    there, and where to look (the report and the page both)."""
    total = sum(r["ns"] for r in rows)
    gaps = sum(r["ns"] for r in rows if (r["name"] or "").startswith(GAP_NAME["thread"]))
    if not total or gaps < total / 2:
        return None
    return (f"{100 * gaps / total:.0f} % of the path is a thread's time between the graph's nodes ('CPU between "
            "ops'): its own CPU ops, which the graph keeps no node for (it keeps launches, synchronizations and "
            "collectives), and any time no op covers; the path says whose thread and when, not which ops: "
            "`tracekit report RUN why_late` names the ops a late rank spent longer on, `tracekit report RUN "
            "breakdown` the waiting and starved time, and `tracekit advise` sizes what fixing the rank saves")
