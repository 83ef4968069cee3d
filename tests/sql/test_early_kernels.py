"""Kernels launched before the profiling window: no launch event, and a correlation id below the rank's
first recorded runtime call. They belong to no step (step NULL, -1 in per-step rows), count in the whole
trace, and doctor names them for what they are; a kernel whose launch is missing inside the window is a
separate finding. Times worked out by hand."""

import tracekit
from tests.conftest import dist, write_trace
from tests.tracegen import kernel, step


def bare_kernel(name, ts, dur, correlation, stream=7):
    """A kernel whose runtime launch is not in the trace."""
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
            "args": {"stream": stream, "device": 0, "correlation": correlation}}


def test_early_kernels_belong_to_no_step(tmp_path):
    # steps 1 (100-200 us) and 2 (200-300 us). Launched comm kernels have correlation ids > 1000 (tracegen);
    # an allreduce with correlation 7 runs 100-130 (launched before the profile), a compute kernel with
    # correlation 2_000_000 (above the first runtime call: its launch was dropped) runs 150-160.
    evs = [step(1, 100, 100), step(2, 200, 100)]
    evs += kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 140, 20, stream=20, launch=(120, 1))  # step 1
    evs += kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 250, 10, stream=20, launch=(210, 1))  # step 2
    evs += [bare_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 100, 30, correlation=7, stream=20),
            bare_kernel("void at::native::vectorized_elementwise_kernel<4>", 150, 10, correlation=2_000_000)]
    write_trace(tmp_path / "rank0.json", evs, header=dist(0))
    run = tracekit.ingest([tmp_path / "rank0.json"], tmp_path / "run", jobs=1)
    got = run.sql("SELECT ts_ns, step, launch_status FROM gpu_kernels ORDER BY ts_ns").to_pylist()
    assert got == [{"ts_ns": 100_000, "step": None, "launch_status": "before window"},
                   {"ts_ns": 140_000, "step": 1, "launch_status": "recorded"},
                   {"ts_ns": 150_000, "step": 1, "launch_status": "missing"},
                   {"ts_ns": 250_000, "step": 2, "launch_status": "recorded"}]
    # comm: whole trace 30 + 20 + 10 = 60 us; step 1 owns 20, step 2 10, and step -1 the early 30
    rows = {r["step"]: r["comm_ns"] for r in run.sql("SELECT step, comm_ns FROM comm_overlap").to_pylist()}
    assert rows == {None: 60_000, -1: 30_000, 1: 20_000, 2: 10_000}
    found = {r["check"]: r for r in tracekit.report(run, "doctor").to_pylist()}
    early = found["kernels launched before the profile"]
    assert (early["severity"], early["ranks"]) == ("info", "0")
    assert early["finding"].startswith("1 GPU kernel (0.0 ms, 0.0 ms of it comm) ran inside the window but was "
                                       "launched before the profiler started (correlation ids below the first "
                                       "recorded runtime call): it counts in the whole trace")
    assert "start profiling one step earlier" in early["fix"]
    missing = found["kernels without launch"]
    assert missing["finding"].startswith("1 of 4 GPU kernels has no CPU launch event inside the profiled window")
    # a report that shows the step -1 row says what it holds, kernels launched before the profile included
    # (breakdown partitions by time: the early kernel ran inside step 1's window, and it has no -1 row)
    from tracekit.table_meta import note_of
    assert tracekit.report(run, "breakdown", by="step")["step"].to_pylist() == [1, 2]
    for name in ("overlap",):
        t = tracekit.report(run, name, by="step")
        assert -1 in t["step"].to_pylist(), name
        assert note_of(t) == ("step -1: time and kernels outside every ProfilerStep's window; on 1 rank (0) it "
                              "holds 1 kernel launched before the profiler started (doctor: kernels launched "
                              "before the profile)"), name
    keys = [r["key"] for r in tracekit.report(run, "exposed", by="step").to_pylist()]
    assert "-1 (outside every step)" in keys
