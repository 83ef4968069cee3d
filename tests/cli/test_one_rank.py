"""One rank of a job, the commonest trace users have (issue 37, item 6): its collectives match no instance,
so the trace cannot tell a kernel's transfer from its waiting for the ranks it lacks. Its exposed
collectives are still sized (an upper bound, said so); a counterfactual of the other ranks is refused with
that reason, never printed as a change of 0. Hand-made: rank 0 of 2, worked out below in us."""

import pytest

import tracekit
from tests.conftest import dist, write_trace
from tests.tracegen import cpu_op, kernel, step

NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
ARGS = {"Collective name": "allreduce", "In msg nelems": 1 << 20, "Out msg nelems": 1 << 20, "dtype": "Float",
        "Group size": 2, "Process Group Name": "0", "Process Group Description": "default_pg",
        "Process Group Ranks": "[0, 1]"}


def one_rank(tmp_path):
    """Step [0, 1000): a GEMM launched at 5 runs [10, 400); the allreduce launched at 8 runs after it on the
    same stream, [400, 950); cudaStreamSynchronize [402, 951) waits for it; the thread then runs to 1000."""
    evs = [step(1, 0, 1000), cpu_op("aten::mm", 4, 2)] + kernel("ampere_sgemm_128x64_nn", 10, 390, launch=(5, 1))
    evs += [cpu_op("c10d::allreduce_", 7, 3)] + kernel(NCCL, 400, 550, launch=(8, 1), **ARGS)
    evs += [cpu_op("cudaStreamSynchronize", 402, 549, cat="cuda_runtime"), cpu_op("aten::add_", 960, 30)]
    (tmp_path / "t").mkdir()
    write_trace(tmp_path / "t" / "rank0.json", evs, header=dist(0, world=2))
    return tracekit.ingest([tmp_path / "t"], tmp_path / "run", jobs=1)


def test_an_exposed_collective_on_one_rank_is_sized_as_an_upper_bound(tmp_path):
    """Its kernel of no duration: the synchronize returns 1 us after its call (402 -> 403), the thread's
    49 us after it end the step at 452: 548 us of 1000 saved at most (the kernel's 550 us hold the wait for
    rank 1, which the trace does not have)."""
    from tracekit.commands.advise import advise

    rows = advise(one_rank(tmp_path)).to_pylist()
    (f,) = [r for r in rows if r["finding"] == "exposed communication: allreduce"]
    assert f["saving_ms"] == pytest.approx(0.548, abs=0.002)
    assert "an upper bound" in f["evidence"] and "waiting for them" in f["evidence"]
    assert f["confidence"] == "low"


@pytest.mark.parametrize("flags", [["--fix-rank", "0"], ["--comm-speedup", "2"]])
def test_a_counterfactual_of_the_other_ranks_is_refused_with_its_reason(tmp_path, flags, capsys):
    from tracekit.cli.main import main

    one_rank(tmp_path)
    capsys.readouterr()
    assert main(["whatif", str(tmp_path / "run"), *flags]) != 0
    err = capsys.readouterr().err
    assert "needs the other ranks of the job" in err and "cannot separate" in err, err
    # hiding the group is an upper bound the trace supports: the same 548 us as advise
    assert main(["whatif", str(tmp_path / "run"), "--overlap", "default_pg", "--format", "json"]) == 0
    import json
    (row,) = json.loads(capsys.readouterr().out)
    assert row["change_ms"] == pytest.approx(-0.548, abs=0.002)
