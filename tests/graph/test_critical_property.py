"""Property: on random timelines (random dependency graphs whose measured times are a consistent schedule
with random gaps), the critical path's pieces add up to each step's span exactly, and the path is a chain
of nodes each of which depends on the one before it."""

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit.graph import Graph
from tracekit.graph.critical import critical_path, step_spans, walk


def random_graph(seed: int, n: int, ranks: int) -> Graph:
    rng = np.random.default_rng(seed)
    rank = np.concatenate([np.arange(ranks), rng.integers(0, ranks, n - ranks)])
    kind = np.array(["step_start"] * ranks + ["kernel"] * (n - ranks), dtype=object)
    dur = np.concatenate([np.zeros(ranks, np.int64), rng.integers(0, 50, n - ranks)])
    src, dst, gap = [], [], []
    for v in range(ranks, n):
        for u in rng.choice(v, size=min(v, int(rng.integers(1, 4))), replace=False):
            src.append(int(u))
            dst.append(v)
            gap.append(int(rng.integers(0, 20)))
    src, dst, gap = np.array(src), np.array(dst), np.array(gap, dtype=np.int64)
    ts = np.zeros(n, np.int64)
    ts[:ranks] = rng.integers(0, 30, ranks)
    for v in range(ranks, n):  # a consistent schedule: the latest pred end + gap, plus random slack
        m = dst == v
        ts[v] = int((ts[src[m]] + dur[src[m]] + gap[m]).max()) + int(rng.integers(0, 5))
    return Graph(node_id=np.arange(n), rank=rank, step=np.ones(n, np.int64), kind=kind,
                 name=np.array([f"n{i}" for i in range(n)], dtype=object),
                 cause=np.array(["compute: gemm" if d else "" for d in dur], dtype=object),
                 ts_ns=ts, dur_ns=dur, src=src, dst=dst, edge_kind=np.array(["stream"] * len(src), dtype=object),
                 gap_ns=gap)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(4, 60), ranks=st.integers(1, 3))
def test_the_path_adds_up_to_the_span_and_is_a_chain(seed, n, ranks):
    g = random_graph(seed, n, ranks)
    r = g.replay()
    assert np.array_equal(r.start_ns, g.ts_ns)  # a consistent schedule replays to itself
    (lo, hi, last), = step_spans(r).values()
    assert lo == g.ts_ns[:ranks].min() and hi == (g.ts_ns + g.dur_ns).max()
    rows: pa.Table = critical_path(r)
    assert sum(rows.column("ns").to_pylist()) == hi - lo
    pieces = walk(r, last, lo)  # latest first
    assert all(b > a for a, b, *_ in pieces)
    assert all(p[0] == q[1] for p, q in zip(pieces, pieces[1:], strict=False))  # contiguous: they tile the span
    edges = set(zip(g.src.tolist(), g.dst.tolist(), strict=True))
    chain = []
    walk(r, last, lo, chain)
    assert chain[0] == last
    for later, earlier in zip(chain, chain[1:], strict=False):  # each node walked depends on the next one
        assert (earlier, later) in edges
    assert {p[5] for p in pieces} <= set(chain)


def test_the_path_says_when_it_is_mostly_unrecorded_thread_time():
    """A path that is mostly a thread's time between the graph's nodes names the thread, not its ops: the
    report says so and where to look, with the share worked by hand."""
    from tracekit.graph.critical import thread_gap_note

    rows = [{"name": "CPU between ops", "ns": 60}, {"name": "CPU between ops (+2 more)", "ns": 15},
            {"name": "gemm", "ns": 25}]
    assert thread_gap_note(rows).startswith("75 % of the path is a thread's time between the graph's nodes")
    assert thread_gap_note([{"name": "CPU between ops", "ns": 40}, {"name": "gemm", "ns": 60}]) is None
