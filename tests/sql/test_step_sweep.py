"""The sweep under step_breakdown (_step_segments) on inline pieces and windows (no trace file), against
counting by hand: for each unit cell [t, t + 1) of small integer times, how many pieces of each class
cover it and which window holds it. The sweep carries its six counts three to a running sum
(tk_lane) and the window's step as a running sum of its edges; these checks count each class alone."""

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit import sql_files as tksql
from tracekit.rules import define_base

CLASSES = ["c_gemm", "c_attention", "c_elementwise", "c_other", "comm", "memory"]
COLUMN = dict(zip(CLASSES, "gaeokm", strict=True))
piece = st.tuples(st.sampled_from(CLASSES), st.integers(0, 120), st.integers(1, 40))
# windows as step_windows makes them: consecutive, never overlapping (a zero-length one included)
windows = st.lists(st.tuples(st.integers(0, 130), st.integers(0, 40)), max_size=4).map(
    lambda ws: [(n + 1, s, s + d) for n, (s, d) in enumerate(sorted(ws))])


def no_overlap(ws):
    out, last_end = [], None
    for n, s, e in ws:
        s = s if last_end is None else max(s, last_end)
        out.append((n, s, max(s, e)))
        last_end = max(s, e)
    return out


COLUMNS = {
    "_step_pieces": "rank BIGINT, cls VARCHAR, detail VARCHAR, event_index BIGINT, t0 BIGINT, t1 BIGINT",
    "_collectives": "rank BIGINT, event_index BIGINT, pg_desc VARCHAR, pg_ranks VARCHAR, pg_name VARCHAR, "
                   "collective VARCHAR",
    "collective_waits": "rank BIGINT, event_index BIGINT, instance_key VARCHAR, wait_ns BIGINT",
    "collective_instances": "instance_key VARCHAR, status VARCHAR",
    "step_windows": "rank BIGINT, step BIGINT, ts_ns BIGINT, end_ns BIGINT",
    "comm_intervals": "rank BIGINT, step BIGINT, kind VARCHAR, ts_ns BIGINT, end_ns BIGINT, event_index BIGINT",
}


def inline(threads=None, **rows):
    """A connection with the macros and the rules' input tables, given here row by row."""
    con = duckdb.connect(config={"threads": threads} if threads else {})
    define_base(con)
    for name, values in rows.items():
        con.execute(f"CREATE TABLE {name} ({COLUMNS[name]})")
        if values:
            con.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' * len(values[0]))})", values)
    return con


def as_table(rule, name=None):
    """Rule ``rule``'s file with its view made a table (of ``name``, default its own)."""
    return tksql.rule(rule).text.replace(f"CREATE OR REPLACE VIEW {rule} AS",
                                                  f"CREATE TABLE {name or rule} AS")


def segments(pieces, wins):
    con = inline(_step_pieces=[(0, c, None, None, s, s + d) for c, s, d in pieces],
                 step_windows=[(0, *w) for w in wins])
    con.execute(tksql.rule("_step_segments").text)
    cols = [d[0] for d in con.execute("SELECT * FROM _step_segments").description]
    return [dict(zip(cols, r, strict=True)) for r in con.execute("SELECT * FROM _step_segments ORDER BY t").fetchall()]


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.lists(piece, max_size=30), windows)
def test_each_cell_of_the_sweep_counts_its_pieces_and_names_its_window(pieces, wins):
    wins = no_overlap(wins)
    rows = segments(pieces, wins)
    points = sorted({t for _, s, d in pieces for t in (s, s + d)} | {t for _, s, e in wins for t in (s, e)})
    # segments run from each cut point to the next: together they cover [first point, last point)
    assert [(r["t"], r["t1"]) for r in rows] == list(zip(points, points[1:], strict=False))
    for r in rows:
        for t in range(r["t"], r["t1"]):
            for cls in CLASSES:
                assert r[COLUMN[cls]] == sum(1 for c, s, d in pieces if c == cls and s <= t < s + d), (t, cls)
            assert r["step"] == next((n for n, s, e in wins if s <= t < e), -1), t
        assert r["len"] == r["t1"] - r["t"]


def test_many_pieces_at_once_in_every_lane():
    """Up to 300 pieces of a class active at once, every class at once, and a window: each count comes
    back from its lane exactly (the lanes' running sums carry into one another if a count spills)."""
    pieces = [(cls, i, 1000 - i) for k, cls in enumerate(CLASSES) for i in range(100 + 30 * k)]
    rows = segments(pieces, [(7, 0, 500)])
    def at(t):
        return next(r for r in rows if r["t"] <= t < r["t1"])
    full = at(300)  # every piece of every class starts before 300 and ends at 1000
    assert {cls: full[COLUMN[cls]] for cls in CLASSES} == {cls: 100 + 30 * k for k, cls in enumerate(CLASSES)}
    assert full["step"] == 7 and at(500)["step"] == -1


def test_lanes_hold_counts_up_to_their_width():
    """tk_lane_count reads each 42-bit lane of a running sum exactly, sign included, from -2^41 to 2^41 - 1 in
    every lane, while the sums of single instants (the deltas) carry into and borrow from the next lane."""
    con = duckdb.connect()
    define_base(con)
    top, bottom = 2 ** 41 - 1, -(2 ** 41)
    deltas = [(top, 5, top), (-top, -5, bottom - top), (bottom, top, 1), (1 - bottom, bottom - top, -1),
              (-1, 0, top)]
    total = 0
    for i, d in enumerate(deltas):
        total += con.execute("SELECT ?::HUGEINT * tk_lane(0) + ?::HUGEINT * tk_lane(1) + ?::HUGEINT * tk_lane(2)",
                             list(d)).fetchone()[0]
        lanes = con.execute("SELECT tk_lane_count(?::HUGEINT, 0), tk_lane_count(?::HUGEINT, 1), "
                            "tk_lane_count(?::HUGEINT, 2)", [total] * 3).fetchone()
        want = [sum(x[k] for x in deltas[:i + 1]) for k in range(3)]
        assert all(bottom <= w <= top for w in want)
        assert list(lanes) == want, i


def test_the_largest_step_number_names_its_window():
    """A window's step rides the sweep as step + 1: the largest BIGINT step (ProfilerStep#2^63-1) must
    neither overflow nor read back as another step, in _step_segments and in comm_segments."""
    big = 2 ** 63 - 1
    rows = segments([("c_gemm", 5, 10)], [(big - 1, 0, 10), (big, 10, 30)])
    assert [(r["t"], r["step"]) for r in rows] == [(0, big - 1), (5, big - 1), (10, big), (15, big)]
    con = inline(comm_intervals=[(0, None, "compute", 5, 25, 0)], step_windows=[(0, big, 0, 20)])
    con.execute(tksql.rule("comm_segments").text)
    got = con.execute("SELECT ts_ns, end_ns, window_step FROM comm_segments ORDER BY ts_ns").fetchall()
    assert got == [(5, 20, big), (20, 25, -1)]


def breakdown(tables, threads):
    """step_breakdown of the tables given: collective_waits and collective_instances (its status only) as
    the reduce's rule _rank_waits joins them for the finish."""
    con = inline(threads, **tables)
    con.execute(as_table("_step_segments"))
    con.execute("ALTER TABLE collective_instances ADD COLUMN last_rank BIGINT")
    con.execute("ALTER TABLE collective_instances ADD COLUMN ranks_present BIGINT")
    con.execute(tksql.rule("_rank_waits").text)
    con.execute(tksql.rule("step_breakdown").text)
    return sorted(con.execute("SELECT * FROM step_breakdown").fetchall(), key=repr)


@pytest.mark.slow
def test_the_breakdown_is_the_same_to_the_last_bit_whatever_the_threads_and_partitions():
    """step_breakdown's ns add fractional shares (a third of a segment shared by three kernels): a float sum,
    whose last bits depend on the order of its terms. It adds them in time order, so the figures are the same
    on 1 or 4 threads and with the ranks derived together or one by one (the finish's partitions). Before
    (a sum in the order the plan happened to give), 4 threads changed the last bits of a few rows of this
    timeline in each of 4 tries; the finish ran on one thread to avoid it. The comm kernels wait for their
    collective's last rank for part of their time, so segments are also cut where they turn to transfer."""
    import random

    rnd = random.Random(0)
    tables = {"_step_pieces": [], "step_windows": [], "_collectives": [], "collective_waits": [],
              "collective_instances": [("k", "clean")]}
    for r in (0, 1):
        starts = sorted(rnd.randint(0, 300) for _ in range(3))
        tables["step_windows"] += [(r, n + 1, s, starts[n + 1] if n + 1 < len(starts) else s + 40)
                                   for n, s in enumerate(starts)]
        for i in range(60):
            s, d = rnd.randint(-20, 320), rnd.choice([1, 3, 7, 10, 50, 200])
            cls = rnd.choice(CLASSES + ["comm"] * 6)  # comm kernels, most of them exposed
            tables["_step_pieces"].append((r, cls, cls[2:] if cls.startswith("c_") else None, i, s, s + d))
            if cls == "comm":
                tables["_collectives"].append((r, i, rnd.choice(["DP", "TP", "EP"]), None, None,
                                              rnd.choice(["allreduce", "alltoall"])))
                tables["collective_waits"].append((r, i, "k", rnd.choice([0, 2, 5, d // 2])))
    one = breakdown(tables, 1)
    assert any(x[5] != round(x[5]) for x in one)  # fractional shares: the sums whose order matters
    assert {x[2] for x in one} >= {"compute", "comm", "idle"} and any(x[3] == "waiting at a collective" for x in one)
    for _ in range(8):
        assert breakdown(tables, 4) == one
    by_rank = sorted((row for r in (0, 1) for row in breakdown(
        {n: [x for x in rows if n == "collective_instances" or x[0] == r] for n, rows in tables.items()}, 1)),
        key=repr)
    assert by_rank == one


NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


def test_a_kernel_of_negative_duration_leaves_the_other_counts_as_they_are(tmp_path):
    """A trace may hold a kernel whose dur is negative (a broken clock). Its interval counts -1 where it
    'runs'; the lanes must read that back as -1 of its own count, not borrow from the next lane: the
    allreduce [180, 220) us stays 40 us of comm, in the run and in its step."""
    import tracekit
    from tests.conftest import dist, write_trace
    from tests.tracegen import kernel, step

    ev = [step(1, 100, 200)]
    ev += kernel("ampere_sgemm_128x64_nn", 110, 30, launch=(105, 1))
    ev += kernel("ampere_sgemm_128x64_nn", 210, -20, launch=(205, 1))
    ev += kernel(NCCL, 180, 40, launch=(120, 1))
    write_trace(tmp_path / "t.json", ev, header=dist(0, world=1))
    run = tracekit.ingest([tmp_path / "t.json"], tmp_path / "run", jobs=1)
    comm = {r["step"]: r["comm_ns"] for r in run.sql("SELECT step, comm_ns FROM comm_overlap").to_pylist()}
    assert comm == {None: 40_000, 1: 40_000}


def test_a_step_of_negative_duration_holds_no_time(tmp_path):
    """The last ProfilerStep with a negative dur makes a window that ends before it starts: it holds no
    instant, and the step before keeps its window [100, 200) us: gemm [110, 140), the allreduce [150, 190)
    (one rank: no wait), starved the other 30 us. No step of another number appears."""
    import tracekit
    from tests.conftest import dist, write_trace
    from tests.tracegen import kernel, step

    ev = [step(1, 100, 100), step(2, 200, -50)]
    ev += kernel("ampere_sgemm_128x64_nn", 110, 30, launch=(105, 1))
    ev += kernel(NCCL, 150, 40, launch=(120, 1))
    write_trace(tmp_path / "t.json", ev, header=dist(0, world=1))
    run = tracekit.ingest([tmp_path / "t.json"], tmp_path / "run", jobs=1)
    rows = run.sql("SELECT step, part, detail, ns, timeline_ns FROM step_breakdown").to_pylist()
    assert {(r["step"], r["part"], r["detail"], r["ns"], r["timeline_ns"]) for r in rows} == {
        (1, "compute", "gemm", 30_000, 100_000), (1, "comm", "unknown", 40_000, 100_000),  # (no group recorded)
        (1, "idle", "starved", 30_000, 100_000)}
    busy = run.sql("SELECT busy_ns, idle_ns FROM comm_overlap WHERE step = 1").to_pylist()
    # comm_overlap's window is the step's within the rank's span [110, 190): gemm and the allreduce, idle 10 us
    assert busy == [{"busy_ns": 70_000, "idle_ns": 10_000}]


def exposure(ivs, threads, order):
    con = inline(threads, comm_intervals=ivs, step_windows=[])
    con.execute(as_table("comm_segments", "seg"))
    # the segments in another row order, as another run's plan may leave them
    con.execute(f"CREATE TABLE comm_segments AS SELECT * FROM seg ORDER BY hash(ts_ns + {order})")
    con.execute(tksql.rule("_comm_exposure").text)
    return sorted(con.execute("SELECT * FROM _comm_exposure").fetchall())


def test_each_collectives_exposure_is_the_same_to_the_last_bit_whatever_the_threads_and_row_order():
    """_comm_exposure adds a collective's shares of its exposed segments (1/k of a segment where k comm
    intervals run): a float sum. In time order, it is the same on 1, 2 or 4 threads and whatever the order
    of the segments' rows; before, this generated timeline gave other last bits in 3 of 3 tries."""
    import random

    rnd = random.Random(1)
    ivs = []
    for i in range(300):
        s, d = rnd.randint(0, 3000), rnd.choice([7, 13, 50, 400, 1000])
        ivs.append((0, 1, "comm" if rnd.random() < 0.8 else "compute", s, s + d, i))
    one = exposure(ivs, 1, 0)
    assert any(x[2] != round(x[2]) for x in one)  # fractional shares: the sums whose order matters
    for threads, order in ((4, 1), (2, 2), (4, 3)):
        assert exposure(ivs, threads, order) == one


def test_a_comm_kernel_turning_to_transfer_cuts_the_compute_beside_it():
    """The sweep knows a comm kernel whole; step_breakdown cuts the segments under it where its collective's
    last rank arrived, as if its wait and its transfer were pieces of their own, also where compute runs
    beside it: the compute shares are added segment by segment, and a third or a seventh of a segment is a
    float whose sum depends on where the segments are cut. Hand-worked: 7 compute kernels (1 gemm, 6 other)
    over [0, 30), an allreduce [1, 40) whose last rank arrives at 2, the step's window [0, 100). Segments
    [0, 1), [1, 2), [2, 30) share compute 1 : 6; [30, 40) is exposed transfer; [40, 100) starved."""
    pieces = [(0, "c_gemm", "gemm", 0, 0, 30)] + [(0, "c_other", "other", i, 0, 30) for i in range(1, 7)]
    pieces.append((0, "comm", None, 7, 1, 40))
    got = breakdown({"_step_pieces": pieces, "step_windows": [(0, 1, 0, 100)],
                     "_collectives": [(0, 7, "DP", None, None, "allreduce")],
                     "collective_waits": [(0, 7, "k", 1)], "collective_instances": [("k", "clean")]}, 1)
    gemm = 1 * 1 / 7 + 1 * 1 / 7 + 28 * 1 / 7  # in time order, as the sweep cuts them
    other = 1 * 6 / 7 + 1 * 6 / 7 + 28 * 6 / 7
    assert gemm != 1 * 1 / 7 + 29 * 1 / 7  # (the cut at 2 shows in the last bits)
    assert got == sorted([(0, 1, "compute", "gemm", None, gemm, 100.0), (0, 1, "compute", "other", None, other, 100.0),
                          (0, 1, "comm", "DP", "allreduce", 10.0, 100.0),
                          (0, 1, "idle", "starved", None, 60.0, 100.0)], key=repr)


def test_a_window_past_2_to_the_53_ns_adds_the_lengths_of_its_cut_segments():
    """window_ns adds the lengths of the segments as the arrival cuts them, each a float (found by a
    reviewer: summed over the uncut segments, a window of 2^53 + 3 ns under a comm kernel whose last rank
    arrives at 2^53 + 1 read 9007199254740996 instead of 9007199254740994). Hand-worked: the segments
    [0, 2^53 + 1) and [2^53 + 1, 2^53 + 3), as floats, added in time order."""
    end, arrive = 2 ** 53 + 3, 2 ** 53 + 1
    got = breakdown({"_step_pieces": [(0, "comm", None, 5, 0, end)], "step_windows": [(0, 1, 0, end)],
                     "_collectives": [(0, 5, "DP", None, None, "allreduce")],
                     "collective_waits": [(0, 5, "k", arrive)], "collective_instances": [("k", "clean")]}, 1)
    assert {r[6] for r in got} == {float(arrive) + float(end - arrive)} == {9007199254740994.0}
