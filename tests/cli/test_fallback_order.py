"""advise without a replay (a trace with no ProfilerStep: the rules of docs/advise.md) ranks an exposed
transfer no rule sizes by its exposed time, the most hiding it could save: a tensor-parallel all-reduce
exposed 580 us of a 1 ms timeline came after a data-parallel all-gather whose rule saves 20 us (TraceLens's
B200 trace: 2.120 ms of exposed TP all-reduce listed below a 0.022 ms all-gather). Hand-made: rank 0 of 4
(the others untraced: no clean instance, kernel time stands for the transfer), times in us below."""

import pytest

import tracekit
from tests.conftest import dist, write_trace
from tests.tracegen import cpu_op, kernel

DP = {"Collective name": "allgather", "In msg nelems": 1024, "Out msg nelems": 2048, "dtype": "Float",
      "Group size": 2, "Process Group Name": "1", "Process Group Description": "dp", "Process Group Ranks": "[0, 2]"}
TP = {"Collective name": "allreduce", "In msg nelems": 1 << 20, "Out msg nelems": 1 << 20, "dtype": "Float",
      "Group size": 2, "Process Group Name": "2", "Process Group Description": "tp", "Process Group Ranks": "[0, 1]"}


def run(tmp_path):
    """No ProfilerStep; on one stream: a GEMM [10, 400), the DP all-gather [400, 420) (nothing beside it:
    exposed 20 us), the TP all-reduce [420, 1000) (exposed 580 us). The timeline: [4, 1000), 996 us."""
    evs = [cpu_op("aten::mm", 4, 2)] + kernel("ampere_sgemm_128x64_nn", 10, 390, launch=(5, 1))
    evs += [cpu_op("c10d::allgather_", 7, 1)] + kernel("ncclDevKernel_AllGather_RING_LL", 400, 20, launch=(8, 1), **DP)
    evs += [cpu_op("c10d::allreduce_", 9, 1)] + kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 420, 580,
                                                       launch=(10, 1), **TP)
    (tmp_path / "t").mkdir()
    write_trace(tmp_path / "t" / "rank0.json", evs, header=dist(0, world=4))
    return tracekit.ingest([tmp_path / "t"], tmp_path / "run", jobs=1)


def test_an_unsized_exposed_transfer_ranks_by_its_exposed_time(tmp_path):
    from tracekit.commands.advise import advise

    rows = [r for r in advise(run(tmp_path)).to_pylist() if r["finding"].startswith("exposed communication")]
    assert [r["finding"] for r in rows] == ["exposed communication", "exposed communication: serialized with compute"]
    tp, dp = rows
    assert "(TP" in tp["where"] and tp["saving_ms"] is None and "exposed 0.580 ms" in tp["evidence"]
    assert "(DP" in dp["where"] and dp["saving_ms"] == pytest.approx(0.020, abs=1e-6)
    assert tp["priority"] < dp["priority"]
