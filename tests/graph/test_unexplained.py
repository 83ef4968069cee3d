"""A GPU op that waits for something the trace does not record: the replay keeps 50 us of its slack and
not the rest, says how much in unexplained_ms, and doctor names the step. Figures worked by hand (us)."""

import pytest

import tracekit
from tests.conftest import dist, write_trace
from tests.tracegen import kernel, step

GEMM = "volta_sgemm_128x64_nn"


def run_with_a_late_kernel(tmp_path, late_dur):
    # step [0, 200); a gemm launched at 10 runs [12, 20); the next op of its stream, launched at 15, starts
    # only at 150: 130 us after the gemm's end, its latest predecessor; nothing recorded explains it
    evs = [step(1, 0, 200)] + kernel(GEMM, 12, 8, launch=(10, 1)) + kernel(GEMM, 150, late_dur, launch=(15, 1))
    write_trace(tmp_path / "rank0.json", evs, header=dist(0, world=1))
    return tracekit.ingest([tmp_path], tmp_path / "run", jobs=1)


def test_the_replay_does_not_invent_an_unrecorded_wait(tmp_path):
    run = run_with_a_late_kernel(tmp_path, late_dur=100)
    (row,) = tracekit.report(run, "replay").to_pylist()
    # measured: the late gemm ends at 250; replayed it starts at 20 + 50 (its allowance) and ends at 170,
    # so the step ends with the CPU at 200; 130 - 50 = 80 us unexplained
    assert row["measured_ms"] == pytest.approx(0.250) and row["replayed_ms"] == pytest.approx(0.200)
    assert row["error_pct"] == pytest.approx(-20.0) and row["unexplained_ms"] == pytest.approx(0.080)


def test_doctor_names_the_step_that_does_not_replay(tmp_path):
    run = run_with_a_late_kernel(tmp_path, late_dur=10)
    (row,) = [r for r in tracekit.doctor(run).to_pylist() if r["check"] == "steps that do not replay"]
    assert row["ranks"] == "0" and row["severity"] == "warning"
    # 80 us of a 200 us step (over 5 %), in one op, the longest 80 us
    assert "rank 0 step 1, 0.08 ms of its 0.2 ms step in 1 op, the longest 0.08 ms before volta_sgemm" in row["finding"]
    assert "enable_cuda_sync_events=True" in row["fix"]


def test_no_profiler_step_says_so(tmp_path):
    from tracekit.table_meta import NOTE_KEY

    write_trace(tmp_path / "rank0.json", kernel(GEMM, 12, 8, launch=(10, 1)), header=dist(0, world=1))
    run = tracekit.ingest([tmp_path], tmp_path / "run", jobs=1)
    for name in ("replay", "critical_path"):
        t = tracekit.report(run, name)
        assert t.num_rows == 0 and b"no ProfilerStep" in t.schema.metadata[NOTE_KEY]
