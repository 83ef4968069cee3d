"""Property tests of the overlap views on inline data (Perfetto-style): no trace file, the views'
own SQL over a comm_intervals table, checked against a plain Python computation."""

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit import sql_files as tksql
from tracekit.rules import define_base

interval = st.tuples(st.integers(0, 200), st.integers(0, 60)).map(lambda t: (t[0], t[0] + t[1]))
kinds = st.sampled_from(["comm", "compute", "memory"])
rows = st.lists(st.tuples(kinds, interval, st.one_of(st.none(), st.integers(1, 3))), max_size=25)
# CPU spans of ProfilerSteps 1..3 (steps N sorted by start; a step may be missing)
step_spans = st.lists(st.tuples(st.integers(0, 240), st.integers(1, 80)), min_size=0, max_size=3).map(
    lambda spans: [(n + 1, s, s + d) for n, (s, d) in enumerate(sorted(spans))])


def union(ivs):
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(ivs):
        if e <= s:
            continue
        if cur_e is None or s > cur_e:
            total += 0 if cur_e is None else cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (0 if cur_e is None else cur_e - cur_s)


def cells(ivs):
    """The unit cells [t, t + 1) the intervals cover (times are small integers)."""
    return {t for s, e in ivs for t in range(s, e)}


def intersect_len(a, b):
    """|union(a) ∩ union(b)|."""
    return len(cells(a) & cells(b))


def overlap_rows(data, steps=()):
    con = duckdb.connect()
    define_base(con)  # the macros (tk_in_span)
    con.execute("CREATE TABLE comm_intervals (rank BIGINT, step BIGINT, kind VARCHAR, ts_ns BIGINT, "
                "end_ns BIGINT, event_index BIGINT)")
    con.execute("CREATE TABLE steps (rank BIGINT, step BIGINT, ts_ns BIGINT, end_ns BIGINT, dur_ns BIGINT)")
    if data:
        con.executemany("INSERT INTO comm_intervals VALUES (0, ?, ?, ?, ?, ?)",
                        [(stp, k, s, e, i) for i, (k, (s, e), stp) in enumerate(data)])
    if steps:
        con.executemany("INSERT INTO steps VALUES (0, ?, ?, ?, ?)", [(n, s, e, e - s) for n, s, e in steps])
    for name in ("step_windows", "comm_segments", "comm_overlap"):
        con.execute(tksql.rule(name).text)
    cols = [d[0] for d in con.execute("SELECT * FROM comm_overlap").description]
    rows = con.execute("SELECT * FROM comm_overlap ORDER BY step NULLS FIRST").fetchall()
    return [dict(zip(cols, r, strict=True)) for r in rows]


@pytest.mark.slow  # 150 examples, a DuckDB connection each
@settings(max_examples=150, deadline=None)
@given(rows, step_spans)
def test_overlap_algebra(data, steps):
    out = overlap_rows(data, steps)
    if not data:
        assert out == []
        return
    whole = out[0]
    assert whole["step"] is None
    comm = [iv for k, iv, _ in data if k == "comm"]
    comp = [iv for k, iv, _ in data if k == "compute"]
    busy = [iv for _, iv, _ in data]
    assert whole["comm_ns"] == union(comm)
    assert whole["compute_ns"] == union(comp)
    assert whole["overlap_ns"] == intersect_len(comm, comp)
    assert whole["exposed_comm_ns"] == len(cells(comm) - cells(comp))  # comm cells no compute covers
    assert whole["busy_ns"] == union(busy)
    first, last = min(s for _, (s, e), _ in data), max(e for _, (s, e), _ in data)
    assert whole["window_ns"] == last - first
    assert whole["idle_ns"] == len(set(range(first, last)) - cells(busy))  # cells of the window nothing covers
    # per step, by unit cells: a cell's comm (compute, busy) time belongs to the smallest step among the
    # comm (compute, any) intervals active in it, a NULL step counting as -1
    expect = {}
    for t in range(0, 261):
        active = [(k, -1 if stp is None else stp) for k, (s, e), stp in data if s <= t < e]
        owner = {kind: min((p for k, p in active if k == kind), default=None) for kind in ("comm", "compute")}
        computing = owner["compute"] is not None
        for name, step_, add in (("comm_ns", owner["comm"], 1),
                                 ("overlap_ns", owner["comm"], computing),
                                 ("exposed_comm_ns", owner["comm"], not computing),
                                 ("compute_ns", owner["compute"], 1)):
            if step_ is not None:
                expect.setdefault(step_, dict.fromkeys(("comm_ns", "overlap_ns", "exposed_comm_ns", "compute_ns"),
                                                       0))[name] += int(add)
    for r in out[1:]:
        got = {k: r[k] for k in ("comm_ns", "overlap_ns", "exposed_comm_ns", "compute_ns")}
        assert got == expect.get(r["step"], dict.fromkeys(got, 0)), r["step"]
    # window, busy and idle by time: step N's window runs from its CPU start to the next step's, the last
    # to the later of its CPU end and the end of the intervals it launched; cells of the trace's span
    # [first start, last end) outside every window are step -1
    ends = {n: max([e for _, (s, e), stp in data if stp == n], default=e0) for n, _s, e0 in steps}
    windows = [(n, s, steps[i + 1][1] if i + 1 < len(steps) else max(e, ends[n])) for i, (n, s, e) in enumerate(steps)]
    by_time = {}
    for t in range(first, last):
        owner = next((n for n, s, e in windows if s <= t < e), -1)
        cell = by_time.setdefault(owner, {"window_ns": 0, "busy_ns": 0})
        cell["window_ns"] += 1
        cell["busy_ns"] += any(s <= t < e for _, (s, e), _ in data)
    for r in out[1:]:
        want = by_time.get(r["step"], {"window_ns": 0, "busy_ns": 0})
        assert (r["window_ns"], r["busy_ns"], r["idle_ns"]) == (want["window_ns"], want["busy_ns"],
                                                               want["window_ns"] - want["busy_ns"]), r["step"]
    # every step that owns time or holds part of the span has a row
    owning = {-1 if stp is None else stp for _, _, stp in data} | {n for n, c in by_time.items() if c["window_ns"]}
    assert [r["step"] for r in out[1:]] == sorted(owning)
