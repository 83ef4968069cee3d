"""A step thread's time in an op, less the time it waited in it (a synchronize call, a wait op): what advise
reads to name the op a late rank's extra host work lies in. On a real 8-rank DLRM job, ranks 4 and 5 were
called 'host-bound in aten::index', 2.75 ms a step longer than the median rank: aten::index there holds a
cudaStreamSynchronize waiting for an all-to-all that another rank held up (3.8 of its 3.9 ms). The expected
values below are worked out from the events' times (us), not from the code."""

import pytest

import tracekit
from tests.conftest import dist, write_trace
from tests.tracegen import cpu_op, kernel, step
from tracekit import sql_files as _sql
from tracekit.store import Run

GEMM = "ampere_sgemm_128x64_nn"


def _rank(sync_us: float, mm_us: float) -> list[dict]:
    """Step [0, 2000). '## fwd ##' [50, 1950) holds: aten::index [100, 130 + ``sync_us``) launching at 101 a
    GEMM from 105 that ends 1 us before its cudaStreamSynchronize [110, 110 + ``sync_us``) returns (the call
    waited for it): 30 us of its own work on every rank;
    aten::mm [600, 600 + ``mm_us``); c10d::wait [1500, 1600) holding cudaStreamSynchronize [1510, 1590)."""
    evs = [step(1, 0, 2000), cpu_op("## fwd ##", 50, 1900, cat="user_annotation"),
           cpu_op("aten::index", 100, 30 + sync_us)]
    evs += kernel(GEMM, 105, 110 + sync_us - 1 - 105, launch=(101, 1))
    evs.append(cpu_op("cudaStreamSynchronize", 110, sync_us, cat="cuda_runtime"))
    evs.append(cpu_op("aten::mm", 600, mm_us))
    evs.append(cpu_op("c10d::wait", 1500, 100))
    evs.append(cpu_op("cudaStreamSynchronize", 1510, 80, cat="cuda_runtime"))
    return evs


def _run(tmp_path):
    """Rank 1 waits 370 us in aten::index's synchronize, ranks 0 and 2 20 us; rank 1 runs aten::mm 650 us,
    150 us longer than they do."""
    d = tmp_path / "t"
    d.mkdir()
    for r, (sync, mm) in enumerate([(20, 500), (370, 650), (20, 500)]):
        write_trace(d / f"rank{r}.json", _rank(sync, mm), header=dist(r, world=3))
    tracekit.ingest([d], tmp_path / "run", jobs=1)
    return Run(str(tmp_path / "run"))


def test_an_ops_time_leaves_out_the_threads_waiting_in_it(tmp_path):
    run = _run(tmp_path)
    got = {(r["rank"], r["name"]): r["ms_per_step"]
           for r in run.sql(_sql.load("reports", "_step_thread_ops").text).to_pylist()}
    # aten::index: 400 us less its synchronize's 370 on rank 1, 50 us less 20 on rank 0
    assert got[(1, "aten::index")] == pytest.approx(0.030, abs=1e-6)
    assert got[(0, "aten::index")] == pytest.approx(0.030, abs=1e-6)
    # c10d::wait: 100 us, all of it waiting (the wait op itself is waiting: its synchronize is inside it)
    assert got[(1, "c10d::wait")] == pytest.approx(0.0, abs=1e-6)
    # aten::mm holds no waiting
    assert got[(1, "aten::mm")] == pytest.approx(0.650, abs=1e-6)
    # '## fwd ##': 1900 us less the waiting in it (rank 1: 370 + 100; rank 0: 20 + 100)
    assert got[(1, "## fwd ##")] == pytest.approx(1.430, abs=1e-6)
    assert got[(0, "## fwd ##")] == pytest.approx(1.780, abs=1e-6)


def test_advise_names_the_op_a_late_rank_works_longer_in_not_the_one_it_waits_in(tmp_path):
    """Rank 1 late by 0.1 ms of host work (as the replay would size it): its aten::mm (650 us) runs 150 us
    longer than the median rank's; its aten::index (400 us) 350 us longer, all of it in a synchronize. Before,
    the op named was aten::index (the shorter of the two ops longer by half the excess or more)."""
    from tracekit.commands.advise_replay import _why

    run = _run(tmp_path)
    text, inside = _why(run, [1], {1: 0.1})
    assert inside == {1: "aten::mm"}, text
    assert "0.150 ms a step more inside aten::mm" in text
