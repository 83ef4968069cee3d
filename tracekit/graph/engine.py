"""The replay's engine: a discrete-event simulation of a dependency graph, arrays in, arrays out.

Pure functions of numpy arrays; nothing here reads a run or writes anything. A node starts at the latest of
its predecessors' ends, each plus its edge's gap (a node without predecessors at its base time) and ends
its duration later. The nodes are visited once, in a topological order; the loop is compiled where the
optional C helper is built, else plain Python over lists.
"""

from __future__ import annotations

from collections import deque

import numpy as np


class CycleError(ValueError):
    """The graph has a cycle (the engine stands on nothing of tracekit's: tracekit.graph.Graph breaks
    cycles, see model.py)."""


try:  # the compiled loop (setup.py builds it where a C compiler is found)
    from . import _replay as _compiled
except ImportError:  # pragma: no cover - depends on the build
    _compiled = None

NO_BASE = np.iinfo(np.int64).min // 4  # a node with predecessors has no base time of its own


def in_edges(n: int, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR of the edges by destination: (ptr, edge positions), ptr of length n + 1."""
    by = np.argsort(dst, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=ptr[1:])
    return ptr, by


def topological_order(n: int, src: np.ndarray, dst: np.ndarray, hint: np.ndarray | None = None) -> np.ndarray:
    """An order of the n nodes in which every edge goes forward. ``hint`` (an order to try first, e.g. by
    measured start) is returned when it is one; otherwise Kahn's algorithm. A cycle is an error."""
    if hint is not None:
        pos = np.empty(n, dtype=np.int64)
        pos[hint] = np.arange(n)
        if not len(src) or bool(np.all(pos[src] < pos[dst])):
            return hint
    out = _kahn(n, src, dst, hint)
    if len(out) != n:
        raise CycleError(f"the dependency graph has a cycle through {n - len(out):,} nodes: "
                            "the trace's times contradict its dependencies (report it with the trace)")
    return np.asarray(out, dtype=np.int64)


def simulate(order: np.ndarray, ptr: np.ndarray, by: np.ndarray, src: np.ndarray, gap: np.ndarray,
             dur: np.ndarray, base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of every node (int64 ns). ``order``: a topological order; ``ptr``/``by``: the in-edges
    (in_edges); ``src``/``gap``: per edge; ``dur``/``base``: per node (base: NO_BASE for a node that has
    predecessors, else its start)."""
    n = len(dur)
    esrc = np.ascontiguousarray(src[by], dtype=np.int64)
    egap = np.ascontiguousarray(gap[by], dtype=np.int64)
    if _compiled is not None:
        start = np.empty(n, dtype=np.int64)
        end = np.empty(n, dtype=np.int64)
        _compiled.replay(np.ascontiguousarray(order, dtype=np.int64), np.ascontiguousarray(ptr, dtype=np.int64),
                         esrc, egap, np.ascontiguousarray(dur, dtype=np.int64),
                         np.ascontiguousarray(base, dtype=np.int64), start, end)
        return start, end
    p, s, g, d = ptr.tolist(), esrc.tolist(), egap.tolist(), dur.tolist()
    st = base.tolist()
    en = [0] * n
    for v in order.tolist():
        t = st[v]
        for e in range(p[v], p[v + 1]):
            x = en[s[e]] + g[e]
            if x > t:
                t = x
        st[v] = t
        en[v] = t + d[v]
    return np.asarray(st, dtype=np.int64), np.asarray(en, dtype=np.int64)


def binding(ptr: np.ndarray, by: np.ndarray, src: np.ndarray, dst: np.ndarray, gap: np.ndarray,
            start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per node, the edge that set its start (the first of the in-edges whose src end + gap is the latest;
    -1 for a node without in-edges)."""
    n = len(start)
    ready = np.full(n, NO_BASE, dtype=np.int64)
    val = end[src] + gap
    np.maximum.at(ready, dst, val)
    hit = np.flatnonzero(val == ready[dst])
    out = np.full(n, -1, dtype=np.int64)
    out[dst[hit[::-1]]] = hit[::-1]  # the first hit per node wins: written last
    return out


def _kahn(n: int, src: np.ndarray, dst: np.ndarray, hint: np.ndarray | None = None) -> list[int]:
    """Kahn's algorithm: the nodes in an order where every edge goes forward, as far as it gets (a node on
    a cycle, or after one, is never reached)."""
    indeg = np.bincount(dst, minlength=n).tolist()
    by_src = np.argsort(src, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=ptr[1:])
    succ = dst[by_src].tolist()
    ptr_l = ptr.tolist()
    start = hint.tolist() if hint is not None else range(n)
    ready = deque(v for v in start if indeg[v] == 0)
    out = []
    while ready:
        v = ready.popleft()
        out.append(v)
        for w in succ[ptr_l[v]:ptr_l[v + 1]]:
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    return out


def on_cycles(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """A bool per node: it may lie on a cycle. What Kahn's algorithm cannot order, less the nodes that
    lead to no cycle (trimmed backward the same way): every cycle's nodes are left, and few others."""
    left = np.ones(n, dtype=bool)
    left[np.asarray(_kahn(n, src, dst), dtype=np.int64)] = False
    inner = left[src] & left[dst]
    s, d = src[inner], dst[inner]
    back = np.asarray(_kahn(n, d, s), dtype=np.int64)  # the reversed edges: what leads to no cycle
    trimmed = left.copy()
    trimmed[back] = False
    return trimmed
