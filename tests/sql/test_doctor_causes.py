"""doctor names the true cause of comm kernels without metadata: kernels launched before the profile
(their launching op ran before the window: record_shapes or CPU activity would not help), and kernels of
libraries that no c10d op launches (DeepEP here), named by their library. Hand-made traces; the expected
counts are the kernels written below."""

import tracekit
from tests.conftest import dist, write_trace
from tests.tracegen import cpu_op, kernel, step

AR = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
DISPATCH = "void deep_ep::intranode::dispatch<8, 768, 4096>(int4*, float*, int*)"
COMBINE = "void deep_ep::intranode::combine<__nv_bfloat16, 8, 768, 4096>(__nv_bfloat16*, float*, int*)"
NOTIFY = "void deep_ep::intranode::notify_dispatch<8>(int const*, int*, int, int const*, int*)"
SIZED = {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float",
         "Group size": 2}


def findings(run):
    return {r["check"]: r for r in tracekit.report(run, "doctor").to_pylist()}


def early_kernel(name, ts, dur, correlation, stream=20):
    """A comm kernel whose launch came before the profiler started: no runtime event, a low correlation id."""
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
            "args": {"stream": stream, "device": 0, "correlation": correlation}}


def test_comm_kernels_launched_before_the_profile_are_not_blamed_on_record_shapes(tmp_path):
    # each rank: steps 1 and 2, a sized allreduce in each (args on the kernel, as record_shapes gives them on
    # newer PyTorch), and one allreduce at 100-130 us launched before the profile (correlation 7)
    for r in (0, 1):
        evs = [step(1, 100, 100), step(2, 200, 100), early_kernel(AR, 100, 30, correlation=7)]
        evs += kernel(AR, 140, 20, stream=20, launch=(120, 1), **SIZED)
        evs += kernel(AR, 250, 10, stream=20, launch=(210, 1), **SIZED)
        write_trace(tmp_path / f"rank{r}.json", evs, header=dist(r, world=2))
    got = findings(tracekit.ingest([tmp_path], tmp_path / "run", jobs=1))
    assert "no message sizes" not in got and "NCCL kernels without metadata" not in got, got
    early = got["kernels launched before the profile"]
    assert early["ranks"] == "0,1"
    assert early["finding"].endswith("; 2 comm kernels of them have no size or no launching op, since their "
                                     "launching op ran before the window")


def test_deepep_kernels_are_named_by_their_library(tmp_path):
    # rank 0 and 1 each: DeepEP's own op (not a c10d op) launches notify, dispatch and combine; twice
    for r in (0, 1):
        evs = [step(1, 0, 1000)]
        for t in (100, 500):
            evs.append(cpu_op("DeepEPBuffer.dispatch", t - 10, 200))
            evs += kernel(NOTIFY, t, 5, stream=30, launch=(t - 5, 1))
            evs += kernel(DISPATCH, t + 10, 40, stream=30, launch=(t - 4, 1))
            evs += kernel(COMBINE, t + 100, 40, stream=30, launch=(t - 3, 1))
        write_trace(tmp_path / f"rank{r}.json", evs, header=dist(r, world=2))
    got = findings(tracekit.ingest([tmp_path], tmp_path / "run", jobs=1))
    assert "NCCL kernels without metadata" not in got and "no message sizes" not in got, got
    f = got["comm kernels outside c10d"]
    assert f["ranks"] == "0,1" and f["severity"] == "info"
    assert f["finding"].startswith("DeepEP: 12 kernels (ep_combine 4, ep_dispatch 4, sync 4) launched by its own "
                                   "ops, which no c10d op wraps: tracekit knows their time")
    assert "cannot know their bytes, bus bandwidth or process group" in f["finding"]
    assert "record_shapes would not give them sizes" in f["fix"]
