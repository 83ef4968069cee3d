"""The breakdown report: on a hand-worked two-rank timeline (every expected figure below is worked out
by hand from the events' times), and on every shared trace, where the parts must add up to windows
computed here from the steps and the kernels, independently of step_breakdown."""

import pytest

import tracekit
from tests.conftest import all_shared_files, dist, live, write_trace
from tests.tracegen import kernel, step

GROUP = {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float",
         "Group size": 2, "Process Group Name": "1", "Process Group Description": "DP",
         "Process Group Ranks": "[0, 1]"}
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


def hand_run(tmp_path):
    # rank 0, times in us. Step 1 [0, 100), step 2 [100, 200) (CPU spans).
    r0 = [step(1, 0, 100), step(2, 100, 100)]
    r0 += kernel("volta_sgemm_128x32_nt", 10, 20)                       # gemm [10, 30)
    r0 += kernel("void at::native::vectorized_elementwise_kernel<4>", 25, 15, stream=8)  # [25, 40)
    r0 += kernel(NCCL, 50, 30, stream=20, **GROUP)                       # [50, 80); rank 1 arrives at 60
    r0 += [{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 9, "ts": 85, "dur": 5,
            "args": {"stream": 9}}]                                       # [85, 90)
    r0 += kernel("flash_fwd_kernel", 95, 10)                            # [95, 105): crosses into step 2
    r0 += kernel("triton_poi_fused_add_0", 150, 10)                     # [150, 160)
    r0 += kernel("my_custom_kernel", 160, 10)                           # [160, 170)
    r0 += kernel("late_kernel", 210, 10, launch=(209, 1))               # outside every step
    r1 = [step(1, 0, 100), step(2, 100, 100)] + kernel(NCCL, 60, 20, stream=20, **GROUP)  # [60, 80)
    for r, evs in ((0, r0), (1, r1)):
        write_trace(tmp_path / f"rank{r}.json", evs, header=dist(r, world=2))
    return tracekit.ingest([tmp_path], tmp_path / "run", jobs=1)


def test_a_hand_worked_timeline(tmp_path):
    run = hand_run(tmp_path)
    t = tracekit.report(run, "breakdown")
    got = {(r["rank"], r["step"]): r for r in t.to_pylist()}
    assert set(got) == {(0, 1), (0, 2), (0, -1), (1, 1), (1, 2)}
    from tracekit.table_meta import note_of
    assert note_of(t) == "step -1: the time outside every ProfilerStep's window"  # the -1 row said under the table
    cols = ("timeline_ms", "gemm_ms", "attention_ms", "elementwise_ms", "other_ms", "comm_part_ms", "memory_part_ms",
            "wait_ms", "starved_ms", "outside_ms")
    ms = 1e-3  # the figures below are in us
    expected = {
        # gemm [10, 25) alone + half of [25, 30) shared with the elementwise kernel; elementwise the other
        # half + [30, 40); attention [95, 100); allreduce: waits [50, 60) for rank 1, transfers [60, 80);
        # memcpy [85, 90); idle [0, 10) [40, 50) [80, 85) [90, 95)
        (0, 1): (100, 17.5, 5, 12.5, 0, 20, 5, 10, 30, 0),
        # attention [100, 105), triton_poi [150, 160), other [160, 170); the rest starved; the last
        # step ends at its CPU end (200), after its last kernel
        (0, 2): (100, 0, 5, 10, 10, 0, 0, 0, 75, 0),
        (0, -1): (20, 0, 0, 0, 10, 0, 0, 0, 0, 10),  # [200, 210) idle, the late kernel [210, 220)
        (1, 1): (100, 0, 0, 0, 0, 20, 0, 0, 80, 0),  # arrives last at 60: no wait
        (1, 2): (100, 0, 0, 0, 0, 0, 0, 0, 100, 0),
    }
    for key, exp in expected.items():
        assert tuple(got[key][c] for c in cols) == pytest.approx(tuple(v * ms for v in exp)), key
    assert got[(0, 1)]["comm_part_by_group"] == "DP 0.020"
    by_rank = {r["rank"]: r for r in tracekit.report(run, "breakdown", by="rank").to_pylist()}
    assert by_rank[0]["timeline_ms"] == pytest.approx(220 * ms) and by_rank[0]["starved_ms"] == pytest.approx(105 * ms)



def test_the_pieces_of_the_sweep_are_not_stored_and_read_as_the_hand_worked_timeline(tmp_path):
    """_step_pieces and _step_segments are tables of the finish only (@scratch): no files in the run, and a
    query that names them computes them from the stored facts, as the timeline above says."""
    run = hand_run(tmp_path)
    for name in ("_step_pieces", "_step_segments"):
        assert not (live(tmp_path / "run") / "facts" / name).exists()
    assert (live(tmp_path / "run") / "facts" / "step_breakdown").is_dir()
    got = run.sql("SELECT rank, cls, t0 // 1000 AS t0, t1 // 1000 AS t1 FROM _step_pieces "
                  "ORDER BY rank, t0, cls").to_pylist()
    expected = [(0, "c_gemm", 10, 30), (0, "c_elementwise", 25, 40), (0, "comm", 50, 80),
                (0, "memory", 85, 90), (0, "c_attention", 95, 105), (0, "c_elementwise", 150, 160),
                (0, "c_other", 160, 170), (0, "c_other", 210, 220), (1, "comm", 60, 80)]
    assert [(r["rank"], r["cls"], r["t0"], r["t1"]) for r in got] == expected
    # rank 1's segments: idle [0, 60) and [80, 200) in steps 1 and 2, the transfer [60, 80)
    seg = run.sql("SELECT t // 1000 AS t, t1 // 1000 AS t1, step, k FROM _step_segments "
                  "WHERE rank = 1 ORDER BY t").to_pylist()
    assert [(r["t"], r["t1"], r["step"], r["k"]) for r in seg] == [(0, 60, 1, 0), (60, 80, 1, 1), (80, 100, 1, 0),
                                                                   (100, 200, 2, 0)]


WINDOWS = """
WITH st AS (SELECT rank, step, ts_ns, end_ns, lead(ts_ns) OVER (PARTITION BY rank ORDER BY ts_ns) AS nxt
            FROM steps WHERE step IS NOT NULL),
k AS (SELECT rank, step, max(end_ns) AS e FROM gpu_kernels WHERE step IS NOT NULL GROUP BY ALL)
SELECT st.rank, st.step, coalesce(st.nxt, greatest(st.end_ns, coalesce(k.e, st.end_ns))) - st.ts_ns AS w
FROM st LEFT JOIN k USING (rank, step)
"""


@pytest.mark.parametrize("trace", all_shared_files(), ids=lambda p: getattr(p, "name", str(p)))
def test_parts_add_up_to_each_step_window_on_shared_traces(trace, tmp_path):
    run = tracekit.ingest([trace], tmp_path / "run", jobs=1)
    parts = ("compute_part_ms", "comm_part_ms", "memory_part_ms", "wait_ms", "starved_ms", "outside_ms")
    windows = {(r["rank"], r["step"]): r["w"] / 1e6 for r in run.sql(WINDOWS).to_pylist()}
    rows = tracekit.report(run, "breakdown").to_pylist()
    for r in rows:
        # wait_ms NULL (no clean instance on the rank: its waiting unknown, inside comm_part_ms) counts as 0
        assert sum(r[p] or 0 for p in parts) == pytest.approx(r["timeline_ms"], rel=1e-9, abs=1e-9), r
        fams = r["gemm_ms"] + r["attention_ms"] + r["elementwise_ms"] + r["other_ms"]
        assert fams == pytest.approx(r["compute_part_ms"], rel=1e-9, abs=1e-9)
        if r["step"] != -1:
            assert r["timeline_ms"] == pytest.approx(windows[(r["rank"], r["step"])], rel=1e-9), r
    assert {k for k in windows} <= {(r["rank"], r["step"]) for r in rows}


def test_a_gloo_send_in_flight_hides_behind_the_ops_its_thread_runs(tmp_path):
    """Hand-worked, one Gloo rank (times in us): the step [0, 100); a gloo:send recorded on the step thread
    from its issue at 10 to its completion at 60 (PyTorch records an isend so); the thread runs aten::mm
    [20, 40) meanwhile and aten::add [70, 80) after. Compute: 20 + 10 = 30 us; the send: [10, 20) and
    [40, 60) exposed, 30 us (the op under it is compute, not waiting for the send: it was counted as the
    send's time, 50 us, and compute 10)."""
    from tests.tracegen import cpu_op

    send = cpu_op("gloo:send", 10, 50, cat="user_annotation", **{"Input Dims": [[64]], "Input type": ["float"]})
    evs = [step(1, 0, 100), send, cpu_op("aten::mm", 20, 20), cpu_op("aten::add", 70, 10)]
    write_trace(tmp_path / "rank0.json", evs, header=dist(0, world=2, backend="gloo"))
    run = tracekit.ingest([tmp_path / "rank0.json"], tmp_path / "run", jobs=1)
    (row,) = [r for r in tracekit.report(run, "breakdown").to_pylist() if r["step"] == 1]
    ms = 1e-3
    compute = row["gemm_ms"] + row["attention_ms"] + row["elementwise_ms"] + row["other_ms"]
    # one rank of two: no instance is clean, so the waiting is unknown (NULL), the send's exposed time comm
    assert (compute, row["comm_part_ms"], row["wait_ms"]) == (pytest.approx(30 * ms), pytest.approx(30 * ms), None)
