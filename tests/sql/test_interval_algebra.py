"""Property tests of the overlap views on inline data (Perfetto-style): no trace file, the views'
own SQL over a comm_intervals table, checked against a plain Python computation."""

import duckdb
from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit import sql as tksql

interval = st.tuples(st.integers(0, 200), st.integers(0, 60)).map(lambda t: (t[0], t[0] + t[1]))
kinds = st.sampled_from(["comm", "compute", "memory"])
rows = st.lists(st.tuples(kinds, interval, st.one_of(st.none(), st.integers(1, 3))), max_size=25)


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


def overlap_rows(data):
    con = duckdb.connect()
    con.execute("CREATE TABLE comm_intervals (rank BIGINT, step BIGINT, kind VARCHAR, ts_ns BIGINT, "
                "end_ns BIGINT, event_index BIGINT)")
    if data:
        con.executemany("INSERT INTO comm_intervals VALUES (0, ?, ?, ?, ?, ?)",
                        [(stp, k, s, e, i) for i, (k, (s, e), stp) in enumerate(data)])
    for name in ("comm_segments", "comm_overlap"):
        con.execute(tksql.load("views", name).text)
    cols = [d[0] for d in con.execute("SELECT * FROM comm_overlap").description]
    return [dict(zip(cols, r)) for r in con.execute("SELECT * FROM comm_overlap ORDER BY step NULLS FIRST").fetchall()]


@settings(max_examples=150, deadline=None)
@given(rows)
def test_overlap_algebra(data):
    out = overlap_rows(data)
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
                                 ("compute_ns", owner["compute"], 1),
                                 ("busy_ns", min((p for _, p in active), default=None), 1)):
            if step_ is not None:
                expect.setdefault(step_, dict.fromkeys(("comm_ns", "overlap_ns", "exposed_comm_ns", "compute_ns",
                                                        "busy_ns"), 0))[name] += int(add)
    steps_seen = {-1 if stp is None else stp for _, _, stp in data}
    assert [r["step"] for r in out[1:]] == sorted(steps_seen)
    for r in out[1:]:
        got = {k: r[k] for k in ("comm_ns", "overlap_ns", "exposed_comm_ns", "compute_ns", "busy_ns")}
        assert got == expect.get(r["step"], dict.fromkeys(got, 0)), r["step"]
