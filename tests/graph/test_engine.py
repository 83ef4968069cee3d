"""The replay's engine: the compiled loop and the Python one agree; a topological order is found when the
hint is not one; a cycle is an error for the engine and is broken by the Graph (edges back in time)."""

import numpy as np
import pytest

from tracekit.graph import Graph
from tracekit.graph import engine as E


def test_the_compiled_and_the_python_loops_agree(monkeypatch):
    if E._compiled is None:
        pytest.skip("the compiled helper is not built here (python setup.py build_ext --inplace)")
    rng = np.random.default_rng(7)
    n = 5000
    src = rng.integers(0, n - 1, 3 * n)
    dst = src + rng.integers(1, 50, 3 * n)
    keep = dst < n
    src, dst = src[keep], dst[keep]
    gap = rng.integers(-20, 100, len(src))
    dur = rng.integers(0, 1000, n)
    base = np.where(np.bincount(dst, minlength=n) > 0, E.NO_BASE, rng.integers(0, 100, n))
    order = E.topological_order(n, src, dst, rng.permutation(n))  # not a valid hint: Kahn's order
    ptr, by = E.in_edges(n, dst)
    fast = E.simulate(order, ptr, by, src, gap, dur, base)
    monkeypatch.setattr(E, "_compiled", None)
    slow = E.simulate(order, ptr, by, src, gap, dur, base)
    assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1])
    # by hand on the first node with in-edges: the latest pred end + gap
    v = int(dst[0])
    ins = np.flatnonzero(dst == v)
    assert fast[0][v] == max(fast[1][src[ins]] + gap[ins]) and fast[1][v] == fast[0][v] + dur[v]


def test_a_cycle():
    src, dst = np.array([0, 1, 2]), np.array([1, 2, 1])
    with pytest.raises(E.CycleError, match="cycle through 2 nodes"):
        E.topological_order(3, src, dst)
    # node 2 starts (10) before node 1 (20) in measured time: the edge 1 -> 2 goes back in time and is dropped
    g = Graph(node_id=np.arange(3), rank=np.zeros(3, np.int64), step=np.zeros(3, np.int64),
              kind=np.array(["kernel"] * 3, dtype=object), name=np.array(["a", "b", "c"], dtype=object),
              cause=np.array(["x"] * 3, dtype=object), ts_ns=np.array([0, 20, 10]), dur_ns=np.array([5, 5, 5]),
              src=src, dst=dst, edge_kind=np.array(["stream"] * 3, dtype=object), gap_ns=np.zeros(3, np.int64))
    assert g.dropped == 1 and list(zip(g.src, g.dst, strict=True)) == [(0, 1), (2, 1)]


def test_a_cycle_drops_only_its_own_edges_back_in_time():
    """An edge back in measured time that lies on no cycle holds what follows and is kept (a blocking send
    whose peer's arrival the other rank's clock places 0.06 ms after the send's end: the next op of the
    sender's thread follows the transfer); only the cycle's own edge back in time goes. Nodes (measured
    start): 0 (0), 1 (20), 2 (10) on a cycle 1 -> 2 -> 1; 3 (100) -> 4 (99) goes back in time, on no cycle."""
    src, dst = np.array([0, 1, 2, 3]), np.array([1, 2, 1, 4])
    assert list(E.on_cycles(5, src, dst)) == [False, True, True, False, False]
    g = Graph(node_id=np.arange(5), rank=np.zeros(5, np.int64), step=np.zeros(5, np.int64),
              kind=np.array(["kernel"] * 5, dtype=object), name=np.array(list("abcde"), dtype=object),
              cause=np.array(["x"] * 5, dtype=object), ts_ns=np.array([0, 20, 10, 100, 99]),
              dur_ns=np.array([5, 5, 5, 0, 5]), src=src, dst=dst,
              edge_kind=np.array(["stream"] * 4, dtype=object), gap_ns=np.array([0, 0, 0, -1]))
    assert g.dropped == 1 and list(zip(g.src, g.dst, strict=True)) == [(0, 1), (2, 1), (3, 4)]
    # node 4 follows node 3: node 3 500 ns longer, node 4 starts 500 ns later
    dur = g.dur_ns.copy()
    dur[3] += 500
    assert g.replay(durations=dur).start_ns[4] - g.replay().start_ns[4] == 500


def test_a_tie_is_broken_by_ids_not_by_the_order_of_the_rows():
    """Two ranks' ops end at 10 and both lead into a hub that starts at 10; the step's last node is either of
    two ops ending at 30. Given in either row order, the hub's start is set by the edge from the smaller id
    (node_id 3, rank 0's op; node 7 is rank 1's), the step ends at the last node of the smaller id (11), and
    the critical path names rank 0 throughout: the rows' order followed the run's layout (a folder per rank
    against packed events) and the path named one rank or the other with it."""
    from tracekit.graph.critical import critical_path

    def graph(perm):
        ids = np.array([1, 3, 7, 9, 11, 15])  # step start, op r0, op r1, hub, op r0 after, op r1 after
        rank = np.array([0, 0, 1, -1, 0, 1])
        kind = np.array(["step_start", "kernel", "kernel", "hub", "kernel", "kernel"], dtype=object)
        edges = [(0, 1, "thread"), (0, 2, "thread"), (1, 3, "collective"), (2, 3, "collective"),
                 (3, 4, "collective"), (3, 5, "collective")]
        edges = [edges[i] for i in perm]
        p = np.array([0, 2, 1, 3, 5, 4]) if perm[0] else np.arange(6)  # the nodes' rows in another order too
        inv = np.argsort(p)
        return Graph(node_id=ids[p], rank=rank[p], step=np.zeros(6, np.int64), kind=kind[p],
                     name=np.array(["s", "a", "b", "h", "c", "d"], dtype=object)[p],
                     cause=np.array(["", "x", "x", "", "y", "y"], dtype=object)[p],
                     ts_ns=np.array([0, 0, 0, 10, 10, 10])[p], dur_ns=np.array([0, 10, 10, 0, 20, 20])[p],
                     src=inv[[e[0] for e in edges]], dst=inv[[e[1] for e in edges]],
                     edge_kind=np.array([e[2] for e in edges], dtype=object), gap_ns=np.zeros(6, np.int64))

    paths = [critical_path(graph(perm).replay()).to_pylist() for perm in ([0, 1, 2, 3, 4, 5], [5, 3, 1, 4, 2, 0])]
    assert paths[0] == paths[1]
    assert [(r["rank"], r["cause"], r["ns"]) for r in paths[0]] == [(0, "x", 10), (0, "y", 20)], paths[0]
