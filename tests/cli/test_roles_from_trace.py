"""A group's role read from where its collectives run (issue 37, item 2: an 8-rank Megatron-style TP job
whose undescribed group got DDP's advice). Hand-made 2-rank GPU traces of one undescribed group of 2 ranks
(no config, no description, world 2: the plan alone cannot tell DP from TP); the truth is how each trace is
built: the all-reduces of a tensor-parallel layer run in the forward pass (under Megatron's
_ReduceFromModelParallelRegion) and the backward; data parallelism's run in the backward only."""

import pytest

import tracekit
from tests.conftest import dist, write_trace
from tests.tracegen import cpu_op, kernel, step

NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
ARGS = {"Collective name": "allreduce", "In msg nelems": 1 << 20, "Out msg nelems": 1 << 20, "dtype": "Float",
        "Group size": 2, "Process Group Name": "5", "Process Group Ranks": "[0, 1]"}
BWD = "autograd::engine::evaluate_function: "


def job(tmp_path, forward: int, backward: int, marker: str | None):
    """Per rank: ``forward`` all-reduces launched in the forward (under ``marker`` when given), then
    ``backward`` under the autograd engine; each on the GPU for 300 us with nothing beside it (exposed);
    the thread waits for each in a synchronize call."""
    (tmp_path / "t").mkdir()
    for r in range(2):
        evs, t = [], 0
        for i in range(forward + backward):
            bwd = i >= forward
            name = BWD + (f"{marker}Backward" if marker else "AccumulateGrad") if bwd else (marker or "aten::linear")
            evs.append(cpu_op(name, t, 20))
            evs += kernel(NCCL, t + 5, 300, stream=20, launch=(t + 2, 1), **ARGS)
            evs.append(cpu_op("cudaStreamSynchronize", t + 20, 290, cat="cuda_runtime"))
            t += 400
        evs.append(step(1, 0, t))
        write_trace(tmp_path / "t" / f"rank{r}.json", evs, header=dist(r, world=2))
    return tracekit.ingest([tmp_path / "t"], tmp_path / "run", jobs=1)


def _comm(run):
    from tracekit.commands.advise import advise

    return [f for f in advise(run).to_pylist() if f["finding"].startswith("exposed communication")]


def test_a_group_launched_under_a_tensor_parallel_op_is_tp(tmp_path):
    (f,) = _comm(job(tmp_path, 4, 4, "_ReduceFromModelParallelRegion"))
    assert "(TP, inferred from the trace: its allreduces are launched under _ReduceFromModelParallelRegion)" in \
        f["where"], f
    assert "DDP" not in f["change"] and "sequence parallelism" in f["change"]


def test_reductions_in_the_forward_pass_too_are_tp(tmp_path):
    (f,) = _comm(job(tmp_path, 3, 3, None))
    assert "(TP, inferred from the trace: 6 of its 12 reductions (all ranks) run in the forward pass" in f["where"], f
    assert "DDP" not in f["change"]


def test_reductions_in_the_backward_only_are_dp(tmp_path):
    (f,) = _comm(job(tmp_path, 0, 6, None))
    assert "(DP, inferred from the trace: its 12 reductions (all ranks) run in the backward pass)" in f["where"], f


@pytest.mark.parametrize("forward", [1])
def test_a_loss_all_reduced_in_the_forward_is_not_tensor_parallelism(tmp_path, forward):
    # one all-reduce outside the backward among 8 (a loss logged across ranks): under a quarter, not TP
    (f,) = _comm(job(tmp_path, forward, 7, None))
    assert "(TP" not in f["where"], f
