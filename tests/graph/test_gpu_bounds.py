"""What bounds a GPU job's step, and counterfactuals that respect it, on hand-built GPU timelines whose answers
are worked out below from the events' times (us), not from the code (issue 37). The rule under test: an NCCL
call never blocks the thread that issued it; a thread waits only where the trace shows it blocked (a
synchronize call), so fixing a late rank cannot move another rank's thread sooner than its own work allows."""

import pytest

import tracekit
from tests.conftest import dist, write_trace
from tests.tracegen import cpu_op, kernel, step

NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
GEMM = "ampere_sgemm_128x64_nn"
ARGS = {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float",
        "Group size": 3, "Process Group Name": "0", "Process Group Description": "default_pg",
        "Process Group Ranks": "[0, 1, 2]"}


def _ingest(tmp_path, per_rank):
    (tmp_path / "t").mkdir()
    for r, evs in per_rank.items():
        write_trace(tmp_path / "t" / f"rank{r}.json", evs, header=dist(r, world=len(per_rank)))
    return tracekit.ingest([tmp_path / "t"], tmp_path / "run", jobs=1)


def _work(evs, t0, n, per):
    """n ops of per us from t0, each launching a 5 us GEMM 1 us in (the host issues tiny kernels: host-bound)."""
    for i in range(n):
        t = t0 + i * per
        evs.append(cpu_op("aten::linear", t, per - 1))
        evs += kernel(GEMM, t + 3, 5, launch=(t + 1, 1))


def _allreduce(evs, t_op, kernel_start, kernel_end):
    evs.append(cpu_op("c10d::allreduce_", t_op, 5))
    evs += kernel(NCCL, kernel_start, kernel_end - kernel_start, stream=20, launch=(t_op + 1, 1), **ARGS)


def _even_rank() -> list[dict]:
    """host_bound_job's ranks 0 and 1 (its docstring gives their times)."""
    e = [step(1, 0, 1010)]
    _work(e, 0, 10, 50)
    _allreduce(e, 500, 503, 613)
    _work(e, 600, 10, 40)
    _allreduce(e, 1000, 1003, 1028)
    return e


def host_bound_job(tmp_path):
    """Every rank's thread busy all step launching 5 us kernels (GPU busy ~10 %); rank 2 a little slower.
    Ranks 0, 1: work [0, 500); allreduce 1 (op [500, 505), its kernel from 503); idle [505, 600) (Python
    the profiler does not record); work [600, 1000); allreduce 2 (op [1000, 1005), kernel from 1003); step
    [0, 1010). Rank 2: work [0, 590); allreduce 1 at 590 (kernel from 593); 10 us gap; work [605, 1005);
    allreduce 2 at 1005 (kernel from 1008); step [0, 1015). Allreduce 1 transfers [593, 613) (its last rank,
    2, arrives at 593), allreduce 2 [1008, 1028): the job's step ends at 1028 (rank 2's GPU)."""
    evs = {0: _even_rank(), 1: _even_rank(), 2: []}
    e = evs[2]
    e.append(step(1, 0, 1015))
    _work(e, 0, 10, 59)
    _allreduce(e, 590, 593, 613)
    _work(e, 605, 10, 40)
    _allreduce(e, 1005, 1008, 1028)
    return _ingest(tmp_path, evs)


def test_fixing_a_rank_of_a_host_bound_job_saves_only_what_the_others_threads_allow(tmp_path):
    """Ranks 0 and 1 issue allreduce 2 at 1001 (its kernel from 1003) by their own threads' time, which no
    collective holds (an NCCL call never blocks): with rank 2 at their pace, allreduce 2 still transfers from
    1003, so the job's step ends at 1023 at the soonest: 5 us saved of 1028, never more. (The Gloo rule read
    ranks 0 and 1's idle [505, 600), in which allreduce 1 completes, as waiting for it: fixing rank 2 moved
    their threads 80 us sooner and 'saved' about 95 us.)"""
    from tracekit.graph import counterfactual as cf

    run = host_bound_job(tmp_path)
    sp = cf.split(run)
    base = sp.replay()
    assert cf.measured_job_step_ms(base) == pytest.approx(1.028, abs=1e-6)
    dur, gap = cf.ranks_at_pace(sp, [2])
    fixed = sp.replay(durations=dur, gaps=gap)
    saving = cf.measured_job_step_ms(base) - cf.job_step_ms(fixed)
    assert -1e-6 <= saving <= 0.005 + 1e-6, saving
    # and no thread of ranks 0 and 1 ends its step sooner than its own time (none of it blocked) allows
    assert cf.thread_bound_violations(sp, fixed, fixed=[2]) == []
    # idle is host idle on a GPU rank: no wait node held by a transfer
    assert not (sp.graph.kind == "wait").any()


def test_a_host_bound_job_is_named_so_first(tmp_path):
    """Every rank's thread runs its own ops 90 % of its step or more (the idle 95 us of ranks 0 and 1 aside)
    while its GPU computes 50 us of kernels and two transfers of 20 us: host-bound on every rank. Launches
    free, every rank's GPU could run its 10 + 10 kernels and both allreduces back to back (the first
    allreduce's kernels from 503 on ranks 0-1, the last rank's from 593 on rank 2: the graph keeps the
    host idle of ranks 0 and 1), so the saving is an upper bound, and positive."""
    from tracekit.commands.advise import advise

    run = host_bound_job(tmp_path)
    bound = {r["rank"]: r for r in tracekit.report(run, "bound", by="rank").to_pylist()}
    assert {r: b["bound"] for r, b in bound.items()} == {0: "host", 1: "host", 2: "host"}
    # one thread per rank runs the ops: advise names no autograd thread (it named one on every GPU job)
    assert "the step thread busy with its own ops" in advise(run).to_pylist()[0]["evidence"]
    # ranks 0, 1: ops 10 x 49 + 5 + 10 x 39 + 5 = 890 us busy; the step's window runs to the end of the
    # last GPU op it launched (allreduce 2, at 1028), its host idle to the thread's last record (the
    # ProfilerStep's end, 1010: after it the trace says nothing of the thread): 120 us idle
    assert bound[0]["timeline_ms"] == pytest.approx(1.028, abs=1e-6)
    assert bound[0]["host_busy_ms"] == pytest.approx(0.890, abs=1e-6)
    assert bound[0]["host_idle_ms"] == pytest.approx(1.010 - 0.890, abs=1e-6)
    top = advise(run).to_pylist()[0]
    assert top["finding"].startswith("host-bound on every rank (GPUs busy"), top
    assert top["saving_ms"] is not None and 0 < top["saving_ms"] < 1.028
    assert "CUDA graphs" in top["change"]


def starved_rank_job(tmp_path):
    """Ranks 0, 1 GPU-bound: 10 calls [5i, 5i+4] launch 90 us GEMMs at 5i+1, which run back to back [2 + 90i,
    92 + 90i); the allreduce launched at 51 runs after them on the same stream, from 902; cudaDeviceSynchronize
    [55, 1524); step [0, 1525). Rank 2 starved: ops [150i, 150i+149] launch its GEMMs at 150i+1, which run
    [150i+3, 150i+93) (its GPU idle 60 us of every 150); allreduce op [1500, 1505), kernel from 1503;
    synchronize [1505, 1524); step [0, 1525). The allreduce's last rank arrives at 1503: it transfers
    [1503, 1523); ranks 0 and 1 wait 601 us."""
    evs = {r: [] for r in range(3)}
    for r in (0, 1):
        e = evs[r]
        e.append(step(1, 0, 1525))
        for i in range(10):
            e.append(cpu_op("aten::mm", 5 * i, 4))
            e += kernel(GEMM, 2 + 90 * i, 90, stream=7, launch=(5 * i + 1, 1))
        e.append(cpu_op("c10d::allreduce_", 50, 4))
        e += kernel(NCCL, 902, 1523 - 902, stream=7, launch=(51, 1), **ARGS)
        e.append(cpu_op("cudaDeviceSynchronize", 55, 1524 - 55, cat="cuda_runtime"))
    e = evs[2]
    e.append(step(1, 0, 1525))
    for i in range(10):
        e.append(cpu_op("aten::mm", 150 * i, 149))
        e += kernel(GEMM, 150 * i + 3, 90, stream=7, launch=(150 * i + 1, 1))
    e.append(cpu_op("c10d::allreduce_", 1500, 5))
    e += kernel(NCCL, 1503, 20, stream=7, launch=(1501, 1), **ARGS)
    e.append(cpu_op("cudaDeviceSynchronize", 1505, 1524 - 1505, cat="cuda_runtime"))
    return _ingest(tmp_path, evs)


def test_one_starved_rank_among_gpu_bound_ones(tmp_path):
    """Ranks 0 and 1 wait (their GPUs idle 601 us at the allreduce, 4 us otherwise); rank 2's GPU starves
    (idle 605 us, none of it waiting) while its thread is busy: host. At the others' pace rank 2 launches
    its GEMMs within 55 us, so its GPU runs them back to back as theirs do [~3, ~903): the allreduce
    transfers from ~903, the synchronizes return ~20 us later and every step ends 600 us sooner
    (1525 - 925 us; rank 2's launches land a microsecond or two off the others')."""
    from tracekit.commands.advise import advise

    run = starved_rank_job(tmp_path)
    bound = {r["rank"]: r["bound"] for r in tracekit.report(run, "bound", by="rank").to_pylist()}
    assert bound == {0: "waiting", 1: "waiting", 2: "host"}
    top = advise(run).to_pylist()[0]
    assert top["finding"] == "late rank 2 (host-bound in aten::mm)", top  # its excess lies in its aten::mm
    assert top["saving_ms"] == pytest.approx(0.600, abs=0.005)


def gpu_bound_rank(tmp_path):
    """One rank, two streams: 20 ops [6i, 6i+5] launch 12.5 us kernels at 6i+1, even i on stream 7, odd on
    stream 8; each starts 1 us after its launch or when its stream frees: stream 7 runs [2, 127), stream 8
    [8, 133). The thread's last launch is at 115; cudaDeviceSynchronize [120, 133.5); step [0, 134)."""
    evs = [step(1, 0, 134)]
    free = {7: 0.0, 8: 0.0}
    for i in range(20):
        s = 7 if i % 2 == 0 else 8
        start = max(6 * i + 2, free[s])
        free[s] = start + 12.5
        evs.append(cpu_op("aten::mm", 6 * i, 5))
        evs += kernel(GEMM, start, 12.5, stream=s, launch=(6 * i + 1, 1))
    evs.append(cpu_op("cudaDeviceSynchronize", 120, 13.5, cat="cuda_runtime"))
    assert free == {7: 127.0, 8: 133.0}
    return _ingest(tmp_path, {0: evs})


def test_a_gpu_bound_rank_reads_as_gpu_bound(tmp_path):
    """The GPU runs a kernel from 2 to 133 of the 134 us step: GPU-bound, and the critical path is the
    stream's kernels (stream 8: 10 x 12.5 = 125 us of compute), not the thread's launches (its first
    kernel's launch at 7: about 8 us of launch/CPU before it)."""
    from tracekit.commands.advise import advise

    run = gpu_bound_rank(tmp_path)
    (b,) = tracekit.report(run, "bound", by="rank").to_pylist()
    assert b["bound"] == "GPU" and b["gpu_busy_ms"] == pytest.approx(0.131, abs=1e-6)
    path = tracekit.report(run, "critical_path").to_pylist()
    compute = sum(r["ms"] for r in path if str(r["cause"]).startswith("compute"))
    cpu = sum(r["ms"] for r in path if r["cause"] == "launch/CPU")
    assert compute == pytest.approx(0.125, abs=1e-6) and cpu <= 0.009, path
    top = advise(run).to_pylist()[0]
    assert top["finding"] == "GPU-bound on the rank (GPUs busy 98 %)" and top["saving_ms"] is None, top


def test_waiting_at_collectives_is_unknown_where_no_collective_matched_not_none(tmp_path):
    """Ranks 0 and 1 of host_bound_job in a job of 3 (the traces say world 3, each allreduce's group 3 ranks):
    rank 2's trace is missing, so no instance is clean and no rank's waiting is known. Before, bound said
    wait_ms 0 and advise 'waiting at collectives 0 %', with high confidence; on a real 2-rank trace (HTA's
    trace_filter example, every instance unaligned or missing ranks) the same."""
    from tracekit.commands.advise import advise

    evs = {0: _even_rank(), 1: _even_rank()}
    (tmp_path / "t").mkdir()
    for r, e in evs.items():
        write_trace(tmp_path / "t" / f"rank{r}.json", e, header=dist(r, world=3))
    run = tracekit.ingest([tmp_path / "t"], tmp_path / "run", jobs=1)
    bound = {r["rank"]: r for r in tracekit.report(run, "bound", by="rank").to_pylist()}
    assert {r: (b["wait_ms"], b["wait_pct"], b["clean_collectives_pct"]) for r, b in bound.items()} == \
        {0: (None, None, 0.0), 1: (None, None, 0.0)}
    # breakdown says so too (it printed 0): the allreduce kernels' time, waiting included, is comm_part_ms
    rows = tracekit.report(run, "breakdown").to_pylist()
    assert rows and all(r["wait_ms"] is None for r in rows), rows
    top = advise(run).to_pylist()[0]
    assert top["finding"].startswith("host-bound on every rank"), top
    assert "waiting at collectives unknown: no collective of ranks 0, 1 matched cleanly" in top["evidence"]
    assert top["confidence"] == "low"


def test_waiting_at_collectives_is_measured_where_every_collective_matched(tmp_path):
    """host_bound_job: both allreduces clean on all 3 ranks; ranks 0 and 1 wait for rank 2 only while their
    threads run on (an NCCL call never blocks), so the bound's waiting is known: its share is printed."""
    from tracekit.commands.advise import advise

    run = host_bound_job(tmp_path)
    bound = {r["rank"]: r for r in tracekit.report(run, "bound", by="rank").to_pylist()}
    assert all(b["clean_collectives_pct"] == 100.0 and b["wait_ms"] is not None for b in bound.values())
    assert all(r["wait_ms"] is not None for r in tracekit.report(run, "breakdown").to_pylist())
    top = advise(run).to_pylist()[0]
    assert "waiting at collectives unknown" not in top["evidence"] and top["confidence"] == "high"


def test_a_rank_late_to_its_step_is_named_though_the_replay_cannot_size_it(tmp_path):
    """Three ranks run the same step: a 95 us GEMM launched at 1, then an allreduce (op at 100, kernel launched
    at 101 from 103); rank 2 starts its step 500 us later than ranks 0 and 1 (ts 500), so its allreduce kernel
    starts at 603 and the transfer runs [603, 623) on every rank: ranks 0 and 1 wait 500 us each in it, their
    GPUs with nothing else to run. The replay times each step from the last rank's start, so no late-rank
    finding sizes rank 2 (on a real DLRM job: rank 7, 7.5 ms late to its step, 35.6 ms of the others' waiting,
    never named); it is listed, without a saving, with the others' waiting per step: 2 x 500 us."""
    from tracekit.commands.advise import advise

    evs = {}
    for r, t0 in ((0, 0), (1, 0), (2, 500)):
        e = [step(1, t0, 200 if r == 2 else 700)]
        e.append(cpu_op("aten::mm", t0, 98))
        e += kernel(GEMM, t0 + 3, 95, launch=(t0 + 1, 1))
        _allreduce(e, t0 + 100, t0 + 103, 623)
        evs[r] = e
    run = _ingest(tmp_path, evs)
    rows = advise(run).to_pylist()
    strag = [f for f in rows if f["finding"] == "straggler: rank 2 arrives last"]
    assert len(strag) == 1, [f["finding"] for f in rows]
    assert strag[0]["saving_ms"] is None
    assert "others wait 1.000 ms per step for it (summed over them)" in strag[0]["evidence"]
    assert "not sized by the replay: it starts its steps 0.500 ms after the first rank" in strag[0]["evidence"]
    assert not any(f["finding"].startswith("late rank") and "2" in f["where"] for f in rows)


def test_exposed_communication_the_replay_cannot_shorten_is_listed_without_a_saving(tmp_path):
    """Three ranks alike: step [0, 1000); aten::mm [0, 98) launches a GEMM [3, 98); the allreduce's op at 100
    launches its kernel [103, 303): 200 us of transfer with nothing else on the GPU (exposed: 20 % of the step);
    then the thread runs aten::foo [110, 995) launching nothing. The step ends with the thread's work, so hiding
    the transfer in the replay saves nothing; before, advise dropped it without a word (on HTA's trace_diff
    example: an all-to-all exposed 13.9 ms a step of 76.8)."""
    from tracekit.commands.advise import advise

    evs = {}
    for r in (0, 1, 2):
        e = [step(1, 0, 1000), cpu_op("aten::mm", 0, 98)]
        e += kernel(GEMM, 3, 95, launch=(1, 1))
        _allreduce(e, 100, 103, 303)
        e.append(cpu_op("aten::foo", 110, 885))
        evs[r] = e
    run = _ingest(tmp_path, evs)
    exposed = tracekit.report(run, "exposed").to_pylist()
    rows = advise(run).to_pylist()
    comm = [f for f in rows if f["finding"] == "exposed communication: allreduce"]
    assert len(comm) == 1, [f["finding"] for f in rows]
    assert comm[0]["saving_ms"] is None and comm[0]["confidence"] == "low"
    assert "exposed transfer 0.200 ms per rank and step" in comm[0]["evidence"], (comm[0], exposed)
    assert "no saving is claimed" in comm[0]["evidence"]
    assert all(f["finding"] != "trace hygiene: unmatched collectives" for f in rows)  # the instance is clean


def test_a_gpu_idle_with_its_next_op_launched_is_not_host_bound(tmp_path):
    """One rank, step [0, 402): aten::mm [0, 20) launches a GEMM at 1 (it runs [5, 100)) and another at 2 that
    the GPU starts only at 300 (it runs [300, 400): it waited on a dependency, another stream or an event);
    cudaDeviceSynchronize [20, 401) holds the thread. The GPU is idle [0, 5), [100, 300), [400, 402): 207 us,
    of which [100, 300) with its next op launched (at 2): 200 us queued. The host ran 20 us of ops and idled
    1 us, so the old rule (host busy >= idle) said host-bound; the GPU waited on itself (on HTA's trace_filter
    example 204.6 of rank 0's 328.7 ms GPU idle in step 551 had its next op launched)."""
    from tracekit.commands.advise import advise

    evs = [step(1, 0, 402), cpu_op("aten::mm", 0, 20)]
    evs += kernel(GEMM, 5, 95, launch=(1, 1))
    evs += kernel(GEMM, 300, 100, stream=9, launch=(2, 1))
    evs.append(cpu_op("cudaDeviceSynchronize", 20, 381, cat="cuda_runtime"))
    run = _ingest(tmp_path, {0: evs})
    (b,) = tracekit.report(run, "bound", by="rank").to_pylist()
    assert b["timeline_ms"] == pytest.approx(0.402, abs=1e-6)
    assert b["gpu_busy_ms"] == pytest.approx(0.195, abs=1e-6)
    assert b["gpu_queued_ms"] == pytest.approx(0.200, abs=1e-6)
    assert b["host_busy_ms"] == pytest.approx(0.020, abs=1e-6)
    assert b["bound"] == "dependency"
    # breakdown says the same of the idle: starved 207 us (all the GPU idle in the step), 200 of it queued
    (k,) = tracekit.report(run, "breakdown", by="rank").to_pylist()
    assert k["starved_ms"] == pytest.approx(0.207, abs=1e-6)
    assert k["starved_queued_ms"] == pytest.approx(0.200, abs=1e-6)
    top = advise(run).to_pylist()[0]
    assert top["finding"].startswith("GPU waiting on its own dependencies on the rank"), top


def test_a_launch_into_an_idle_gpu_is_the_hosts_latency_not_a_dependency(tmp_path):
    """One rank, step [0, 150): ten ops [15i, 15i + 14) each launch (at 15i + 1) a 3 us kernel the GPU starts 7 us
    after the launch call began, [15i + 8, 15i + 11). Each idle [15i - 4, 15i + 8) begins before the next launch:
    the GPU waits for the host, its launch latency included, so nothing is queued, and the thread, busy 140 of
    150 us, bounds the step. (Counted from the launch call's start, 9 x 7 us read as queued and the rank as
    'dependency': a helper's attack, with the median launch-to-kernel delay of the DLRM traces.)"""
    evs = [step(1, 0, 150)]
    for i in range(10):
        evs.append(cpu_op("aten::add", 15 * i, 14))
        evs += kernel(GEMM, 15 * i + 8, 3, launch=(15 * i + 1, 1))
    run = _ingest(tmp_path, {0: evs})
    (b,) = tracekit.report(run, "bound", by="rank").to_pylist()
    assert b["gpu_busy_ms"] == pytest.approx(0.030, abs=1e-6)
    assert b["gpu_queued_ms"] == pytest.approx(0.0, abs=1e-6)
    assert b["host_busy_ms"] == pytest.approx(0.140, abs=1e-6)
    assert b["bound"] == "host"
    # the GPU idle [0, 8), the nine [15i - 4, 15i + 8) and [143, 150): 120 us starved, none of it queued
    (k,) = tracekit.report(run, "breakdown", by="rank").to_pylist()
    assert k["starved_ms"] == pytest.approx(0.120, abs=1e-6)
    assert k["starved_queued_ms"] == pytest.approx(0.0, abs=1e-6)


def _backward_on_another_thread():
    """One rank, step [0, 1000) on thread 1: '## forward ##' [0, 300) holding aten::linear [10, 290), which
    launches a GEMM at 11 (it runs [20, 280)); '## backward ##' [300, 900), in which thread 1 runs nothing
    of its own while the autograd thread (2) runs ops [310, 400) and [600, 650), launching GEMMs at 311 (it
    runs [320, 560)) and 601 ([610, 640)); then 'Optimizer.step#SGD.step' [900, 950) on thread 1, Python
    with no recorded op inside (the host's work). The threads' work: [0, 300) (the forward range: no other
    thread runs inside it), [310, 400), [600, 650), [900, 950): 490 us; inside no op 510 us. The GPU: 530 us
    busy; each idle before a GEMM began before its launch (11, 311, 601): nothing queued."""
    evs = [step(1, 0, 1000), cpu_op("## forward ##", 0, 300, cat="user_annotation"), cpu_op("aten::linear", 10, 280)]
    evs += kernel(GEMM, 20, 260, launch=(11, 1))
    evs.append(cpu_op("## backward ##", 300, 600, cat="user_annotation"))
    evs.append(cpu_op("autograd::engine::evaluate_function: MmBackward0", 310, 90, tid=2))
    evs += kernel(GEMM, 320, 240, launch=(311, 2))
    evs.append(cpu_op("autograd::engine::evaluate_function: AddBackward0", 600, 50, tid=2))
    evs += kernel(GEMM, 610, 30, launch=(601, 2))
    evs.append(cpu_op("Optimizer.step#SGD.step", 900, 50, cat="user_annotation"))
    return evs


def test_a_range_the_thread_waits_in_for_the_autograd_thread_is_not_its_work(tmp_path):
    """A fresh user's check of HTA's trace_filter example: the step thread read 98 % busy because its
    '## backward ##' range (235 ms, its longest op inside 0.1 ms) counted as work while the autograd thread ran
    the backward. Counted whole, the ranges gave 950 us of work and bound 'host'; the threads' own ops inside
    the backward and the optimizer's range give 490 (the docstring of _backward_on_another_thread)."""
    run = _ingest(tmp_path, {0: _backward_on_another_thread()})
    (b,) = tracekit.report(run, "bound", by="rank").to_pylist()
    assert b["timeline_ms"] == pytest.approx(1.000, abs=1e-6)
    assert b["host_busy_ms"] == pytest.approx(0.490, abs=1e-6)
    assert b["host_idle_ms"] == pytest.approx(0.510, abs=1e-6)
    assert b["gpu_busy_ms"] == pytest.approx(0.530, abs=1e-6)
    assert b["gpu_queued_ms"] == pytest.approx(0.0, abs=1e-6)
    assert b["bound"] == "host idle"
    # advise's evidence names both threads whose ops are the host's busy time (49 %)
    from tracekit.commands.advise import advise
    top = advise(run).to_pylist()[0]
    assert "its host threads (the step thread, the autograd thread) busy with their ops 49 %" in top["evidence"], top


def test_the_step_thread_waits_for_the_autograd_thread_and_hands_it_the_backward(tmp_path):
    """The replay of _backward_on_another_thread (its docstring's times; a launch's latency, 8.5 us from the
    call's end, kept). The step thread idles in the backward [300, 900) while thread 2 works: thread 2 starts
    when the step thread reaches the backward (its first launch 11 us later, as measured), runs ops [310, 400)
    and [600, 650) and nothing [400, 600) (its host idle); the step thread waits for thread 2's last op to end
    (650), and [650, 900), neither thread running anything, is host idle. With the host's work free (launches
    of no length, the threads' work gaps gone; host idle kept): the step thread reaches the backward at 0,
    thread 2 launches GEMM 2 at 11, idles 200 us and launches GEMM 3 at 211, its last op ends then; the step
    thread idles 250 us and 50 more (its optimizer's work gone): 511; the GPU runs GEMM 1 [8.5, 268.5),
    GEMM 2 [268.5, 508.5), GEMM 3 [508.5, 538.5): the step ends at 538.5 us. With the host idle gone instead
    (both threads'), thread 2 launches GEMM 3 at 401 and ends its last op at 450, the step thread's optimizer
    runs [450, 500), the GPU runs GEMM 3 [560, 590): 590. (Before, the backward's 600 us were the step
    thread's work and thread 2's launches, held by nothing, stayed at 311: the host-free replay gave 988.5
    us, the idle-free 950; a fresh user's attack then found the time after thread 2's last launch kept as a
    fixed lag, 750 here.)"""
    from tracekit.graph import counterfactual as cf

    sp = cf.split(_ingest(tmp_path, {0: _backward_on_another_thread()}))
    names = sorted(str(n) for n in sp.graph.name[sp.graph.kind == "wait"])
    assert names == ["hands work to host thread 2", "host thread 2's last op ends", "waiting for host thread 2"]
    base = sp.replay()
    assert cf.measured_job_step_ms(base) == pytest.approx(1.000, abs=1e-6)
    assert cf.job_step_ms(base) == pytest.approx(1.000, abs=1e-6)
    dur, gap = cf.host_free(sp, [0])
    assert cf.job_step_ms(sp.replay(durations=dur, gaps=gap)) == pytest.approx(0.5385, abs=1e-6)
    dur = sp.graph.dur_ns.copy()
    dur[sp.host_idle] = 0
    assert cf.job_step_ms(sp.replay(durations=dur)) == pytest.approx(0.590, abs=1e-6)


def test_the_host_free_replay_frees_the_work_before_an_idle_interval(tmp_path):
    """One rank, step [0, 500): aten::linear [0, 200) launches a GEMM at 1 (it runs [5, 50)); the thread runs
    nothing [200, 300) (host idle); aten::linear [300, 480) launches a GEMM at 301 ([305, 320)). With the
    host's work free and its idle kept: the launches take no time and the work before and after the idle is
    gone, so the idle runs [0, 100), the second launch is at 100 and its GEMM, 3.5 us after the call as
    measured, runs [103.5, 118.5): the step ends at 118.5 us. (The work before an idle interval was kept:
    the idle ran [198.5, 298.5) and the step ended at 317.)"""
    from tracekit.graph import counterfactual as cf

    evs = [step(1, 0, 500), cpu_op("aten::linear", 0, 200), cpu_op("aten::linear", 300, 180)]
    evs += kernel(GEMM, 5, 45, launch=(1, 1)) + kernel(GEMM, 305, 15, launch=(301, 1))
    sp = cf.split(_ingest(tmp_path, {0: evs}))
    assert cf.job_step_ms(sp.replay()) == pytest.approx(0.500, abs=1e-6)
    dur, gap = cf.host_free(sp, [0])
    assert cf.job_step_ms(sp.replay(durations=dur, gaps=gap)) == pytest.approx(0.1185, abs=1e-6)


def test_a_thread_that_only_prefetches_does_not_make_the_step_thread_wait(tmp_path):
    """(A helper's attack.) Step [0, 1000) on thread 1: '## forward ##' [0, 900) holding aten::linear [0, 100)
    and [800, 900) (each launching a 50 us GEMM at 1 and 801), Python between them; aten::mul [900, 1000).
    Thread 3, a prefetcher, runs aten::copy_ [400, 420) and launches a copy at 401 ([405, 495)): it runs no
    autograd op, so thread 1 does not wait for it: the range is thread 1's work. Host busy [0, 1000) (thread
    3's op inside it), 1000 us; bound host. (Any launching thread cancelled the range: 0.32 ms, 'host idle',
    and a hand-off to thread 3 in the replay.)"""
    from tracekit.graph import counterfactual as cf

    evs = [step(1, 0, 1000), cpu_op("## forward ##", 0, 900, cat="user_annotation"), cpu_op("aten::linear", 0, 100),
           cpu_op("aten::linear", 800, 100), cpu_op("aten::mul", 900, 100), cpu_op("aten::copy_", 400, 20, tid=3)]
    evs += kernel(GEMM, 5, 50, launch=(1, 1)) + kernel(GEMM, 805, 50, launch=(801, 1))
    copy = kernel("Memcpy HtoD (Pageable -> Device)", 405, 90, stream=9, launch=(401, 3))
    copy[0]["cat"], copy[1]["name"] = "gpu_memcpy", "cudaMemcpyAsync"
    run = _ingest(tmp_path, {0: evs + copy})
    (b,) = tracekit.report(run, "bound", by="rank").to_pylist()
    assert b["host_busy_ms"] == pytest.approx(1.000, abs=1e-6)
    assert b["bound"] == "host"
    assert not any("host thread" in str(n) for n in cf.split(run).graph.name)


def test_a_late_ranks_slower_autograd_thread_is_what_fixing_it_saves(tmp_path):
    """(A helper's attack.) Two ranks. Each: '## forward ##' [0, 100) with aten::linear launching a GEMM at 1
    ([5, 95)); '## backward ##' from 100 while thread 2 runs two backward ops, each launching an 80 us GEMM;
    then the step thread calls allreduce (kernel to 720, the same instance on both ranks) and runs aten::add_
    for 50 us. Rank 0: thread 2's ops [110, 200), [200, 290), the step thread resumes at 300; step [0, 355).
    Rank 1: [110, 400), [400, 690), resumes at 700; step [0, 755). Rank 1's excess is its autograd thread's
    400 us: at rank 0's pace it resumes at 300 and its step ends at 355, as rank 0's: 0.400 ms saved. (Its
    work after its last launch was a fixed lag: 0.200 ms.)"""
    def rank(slow):
        res, (a, b), (c, d) = (700, (110, 400), (400, 690)) if slow else (300, (110, 200), (200, 290))
        e = [step(1, 0, res + 55), cpu_op("## forward ##", 0, 100, cat="user_annotation"),
             cpu_op("aten::linear", 0, 100), cpu_op("## backward ##", 100, res - 100, cat="user_annotation"),
             cpu_op("autograd::engine::evaluate_function: MmBackward0", a, b - a, tid=2),
             cpu_op("autograd::engine::evaluate_function: AddBackward0", c, d - c, tid=2),
             cpu_op("c10d::allreduce_", res, 5), cpu_op("aten::add_", res + 5, 50)]
        e += kernel(GEMM, 5, 90, launch=(1, 1)) + kernel(GEMM, a + 5, 80, launch=(a + 1, 2))
        e += kernel(GEMM, max(c + 5, a + 85), 80, launch=(c + 1, 2))
        args = dict(ARGS, **{"Group size": 2, "Process Group Ranks": "[0, 1]"})
        return e + kernel(NCCL, res + 3, 720 - res - 3, stream=20, launch=(res + 1, 1), **args)

    from tracekit.commands.advise import advise
    from tracekit.graph import counterfactual as cf

    run = _ingest(tmp_path, {0: rank(False), 1: rank(True)})
    rows = advise(run).to_pylist()
    (late,) = [f for f in rows if f["finding"].startswith("late rank")]
    assert late["finding"].startswith("late rank 1 ") and late["saving_ms"] == pytest.approx(0.400, abs=1e-3)
    # rank 0 keeps its own pace: its thread issues its last work (add_ to 355) no sooner than measured
    sp = cf.split(run)
    dur, gap = cf.ranks_at_pace(sp, [1])
    assert cf.thread_bound_violations(sp, sp.replay(durations=dur, gaps=gap), fixed=[1]) == []


def _device_sync_job(tmp_path):
    """Two identical ranks, three steps of 1000 us (c = the step's start; times in us). The step thread:
    c10d::allreduce_ [c+1, c+6) launches the all-reduce at c+4 on stream 20 (both ranks arrive at c+10: it
    runs [c+10, c+700), a clean 690 us transfer); aten::mm [c+6, c+12) launches GEMM 1 at c+8 on stream 7
    ([c+12, c+412)); cudaStreamWaitEvent at c+400 (stream 7 waits for the all-reduce); aten::mm [c+402,
    c+410) launches GEMM 2 at c+405 on stream 7 ([c+700, c+900): after the all-reduce); aten::add [c+410,
    c+420) launches an elementwise kernel at c+412 on stream 30 ([c+420, c+700)); cudaDeviceSynchronize
    [c+420, c+905)."""
    args = {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float",
            "Group size": 2, "Process Group Name": "0", "Process Group Description": "default_pg",
            "Process Group Ranks": "[0, 1]"}
    evs = []
    for s in (1, 2, 3):
        c = 1000 * (s - 1)
        evs += [step(s, c, 1000), cpu_op("c10d::allreduce_", c + 1, 5)]
        evs += kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", c + 10, 690, stream=20, launch=(c + 4, 1), **args)
        evs += [cpu_op("aten::mm", c + 6, 6)] + kernel("ampere_sgemm_128x64_nn", c + 12, 400, launch=(c + 8, 1))
        evs += [cpu_op("cudaStreamWaitEvent", c + 400, 1, cat="cuda_runtime"), cpu_op("aten::mm", c + 402, 8)]
        evs += kernel("ampere_sgemm_128x64_nn", c + 700, 200, launch=(c + 405, 1))
        evs += [cpu_op("aten::add", c + 410, 10)]
        evs += kernel("elementwise_kernel", c + 420, 280, stream=30, launch=(c + 412, 1))
        evs += [cpu_op("cudaDeviceSynchronize", c + 420, 485, cat="cuda_runtime")]
    return _ingest(tmp_path, {0: evs, 1: [dict(e) for e in evs]})


def test_a_device_synchronize_waits_for_every_stream(tmp_path):
    """_device_sync_job's all-reduce hidden: GEMM 2 runs right after GEMM 1, [c+412, c+612), but the
    elementwise kernel on stream 30 still runs to c+700, and cudaDeviceSynchronize waits for every stream:
    the step ends 900 - 700 = 200 us sooner. The graph held the synchronize by the op that ended last
    (GEMM 2) alone, so the replay ended it at c+612: 288 us. Exposed, the all-reduce runs with no compute
    only in [c+10, c+12) and [c+412, c+420): 10 us a step, which the finding says the saving exceeds."""
    from tracekit.commands.advise import advise

    run = _device_sync_job(tmp_path)
    (comm,) = [f for f in advise(run).to_pylist() if f["finding"] == "exposed communication: allreduce"]
    assert comm["saving_ms"] == pytest.approx(0.200, abs=1e-6), comm
    assert "more than its exposed transfer 0.010 ms per rank and step" in comm["evidence"], comm


def _launches_job(tmp_path, name="ampere_sgemm_128x64_nn", call=20, at=25, length=12, sync=12):
    """One rank, three steps of 320 us (c = the step's start; us): ten aten::mm ops [c+30i, c+30i+30), each
    calling cudaLaunchKernel [c+30i+3, c+30i+3+call) of a kernel ``name`` that runs [c+30i+at,
    c+30i+at+length); cudaStreamSynchronize [c+300, c+300+sync); nothing after it until c+320."""
    evs = []
    for s in (1, 2, 3):
        c = 320 * (s - 1)
        evs.append(step(s, c, 320))
        for i in range(10):
            t = c + 30 * i
            k, rt = kernel(name, t + at, length, launch=(t + 3, 1))
            rt["dur"] = call
            evs += [cpu_op("aten::mm", t, 30), k, rt]
        evs.append(cpu_op("cudaStreamSynchronize", c + 300, sync, cat="cuda_runtime"))
    return _ingest(tmp_path, {0: evs})


def _slow_launch_job(tmp_path):
    """_launches_job's defaults: each cudaLaunchKernel [c+30i+3, c+30i+23) (20 us: a slow launch) of a 12 us
    GEMM that runs [c+30i+25, c+30i+37); cudaStreamSynchronize [c+300, c+312) (the last GEMM ends at c+307);
    nothing [c+312, c+320). Between GEMMs the GPU idles 18 us [c+30i+37, c+30i+55) while the next launch
    call, begun at c+30i+33, is still running: the host's latency, not a queued op."""
    return _launches_job(tmp_path)


def test_a_launch_still_running_when_the_gpu_goes_idle_is_the_hosts(tmp_path):
    """_slow_launch_job: the thread runs its ops 300 of every 320 us (94 %), the GPU 120 (38 %), and no GPU
    idle has its next op queued (each launch call returns during the idle): host-bound, gpu_queued_ms 0.
    (The rule counted a launch call begun before the idle as queued: 9 x 18 us a step, and the bound read
    'dependency', 'a faster host would not shorten the step'.) With the host free (ops and calls of no
    length; the 8 us after the synchronize is the thread's own time, under the 50 us that makes an idle
    interval): every call at the step's start, the first GEMM 2 us after its call (the latency after the
    call's return, kept), the ten back to back [2, 122), the synchronize's measured 5 us after the last one:
    127 us, 320 - 127 = 193 us sooner. (The launch edge ran from the call's start, so the GPU's 18 us
    between GEMMs was kept as unexplained stream slack: 0.057 ms.)"""
    from tracekit.commands.advise import advise

    run = _slow_launch_job(tmp_path)
    (b,) = tracekit.report(run, "bound", by="rank").to_pylist()
    assert (b["bound"], b["host_busy_ms"], b["gpu_busy_ms"], b["gpu_queued_ms"]) == \
        ("host", pytest.approx(0.900), pytest.approx(0.360), pytest.approx(0.0, abs=1e-9))
    top = advise(run).to_pylist()[0]
    assert top["finding"] == "host-bound on the rank (GPUs busy 38 %)", top
    assert top["saving_ms"] == pytest.approx(0.193, abs=1e-6), top


def _cuda_graph_job(tmp_path):
    """Two ranks, two steps of 1000 us (c = the step's start; us). cudaGraphLaunch [c+10, c+40) launches a
    CUDA graph of four 100 us GEMMs on stream 7, [c+50, c+450) back to back (rank 1's: 150 us each,
    [c+50, c+650)), all four with the call's correlation id; cudaEventRecord [c+40, c+42) and
    cudaStreamWaitEvent [c+42, c+44): the all-reduce on stream 20, launched [c+45, c+50), waits for the
    graph's last GEMM; both ranks' kernels end at c+700 (rank 1 arrives last at c+650, 50 us of transfer);
    cudaStreamSynchronize [c+60, c+705)."""
    import copy

    args = {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float",
            "Group size": 2, "Process Group Name": "0", "Process Group Description": "default_pg",
            "Process Group Ranks": "[0, 1]"}
    per = {}
    for r, gemm in ((0, 100), (1, 150)):
        evs = []
        for s in (1, 2):
            c = 1000 * (s - 1)
            evs.append(step(s, c, 1000))
            first, call = kernel("ampere_sgemm_128x64_nn", c + 50, gemm, launch=(c + 10, 1))
            call.update(name="cudaGraphLaunch", dur=30)
            evs += [first, call]
            for i in range(1, 4):
                k = copy.deepcopy(first)
                k["ts"] = c + 50 + i * gemm
                evs.append(k)
            evs += [cpu_op("cudaEventRecord", c + 40, 2, cat="cuda_runtime"),
                    cpu_op("cudaStreamWaitEvent", c + 42, 2, cat="cuda_runtime")]
            arrive = c + 50 + 4 * gemm
            nccl, ncall = kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", arrive, c + 700 - arrive, stream=20,
                                 launch=(c + 45, 1), **args)
            ncall["dur"] = 5
            evs += [nccl, ncall, cpu_op("cudaStreamSynchronize", c + 60, 645, cat="cuda_runtime")]
        per[r] = evs
    return _ingest(tmp_path, per)


def test_a_cuda_graphs_kernels_are_waited_for_to_the_last(tmp_path):
    """_cuda_graph_job: every kernel of a CUDA graph shares its cudaGraphLaunch's correlation id, and the
    all-reduce waits (cudaStreamWaitEvent) for the op launched last before the wait on stream 7: the graph's
    last GEMM. The join picked any of the four (a tie), so the all-reduce waited for the first and the rest of
    its wait was unexplained: the replay ended rank 0's first step at 600 of its 1000 us, and whatif's fix of rank 1
    was out. Now the replay gives back every step (1000 us), and with rank 1 at rank 0's pace (its GEMMs
    100 us: the graph [c+50, c+450)) both arrive at c+450, the transfer ends at c+500, the synchronize 5 us
    later, the step 200 us shorter."""
    run = _cuda_graph_job(tmp_path)
    rows = tracekit.report(run, "replay").to_pylist()
    assert {(r["rank"], r["step"]): (r["measured_ms"], r["replayed_ms"]) for r in rows} == \
        {(r, s): (pytest.approx(1.0), pytest.approx(1.0)) for r in (0, 1) for s in (1, 2)}
    from tracekit.graph import counterfactual as cf

    sp = cf.split(run)
    dur, gap = cf.ranks_at_pace(sp, [1])
    assert cf.job_step_ms(sp.replay()) - cf.job_step_ms(sp.replay(durations=dur, gaps=gap)) == \
        pytest.approx(0.200, abs=1e-6)


def _one_stall_job(tmp_path):
    """Three ranks, four steps (us). A step from its work's start w: aten::mm [w, w+100) launches a GEMM at
    w+5 ([w+10, w+90)); c10d::allreduce_ [w+100, w+110) launches the all-reduce at w+105 on stream 20, which
    each rank reaches at w+110 and which ends 50 us after the last rank's arrival T; cudaStreamSynchronize
    [w+120, T+55); the step ends 5 us later. Every step is 170 us but step 2: rank 1 idles 2000 us before
    its work ([170, 2170)), so every rank's step 2 is [170, 2340) (ranks 0 and 2 wait in the synchronize)."""
    args = {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float",
            "Group size": 3, "Process Group Name": "0", "Process Group Description": "default_pg",
            "Process Group Ranks": "[0, 1, 2]"}
    per = {r: [] for r in range(3)}
    c = 0
    for s in (1, 2, 3, 4):
        stall = 2000 if s == 2 else 0
        t_last = c + stall + 110  # rank 1's arrival is the last
        for r in range(3):
            w = c + (stall if r == 1 else 0)
            evs = per[r]
            evs += [step(s, c, stall + 170), cpu_op("aten::mm", w, 100)]
            evs += kernel("ampere_sgemm_128x64_nn", w + 10, 80, launch=(w + 5, 1))
            evs += [cpu_op("c10d::allreduce_", w + 100, 10)]
            evs += kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", w + 110, t_last + 50 - (w + 110), stream=20,
                          launch=(w + 105, 1), **args)
            evs += [cpu_op("cudaStreamSynchronize", w + 120, t_last + 55 - (w + 120), cat="cuda_runtime")]
        c += stall + 170
    return _ingest(tmp_path, per)


def test_a_stall_in_one_step_is_a_mean_per_step_and_said_where(tmp_path):
    """_one_stall_job: rank 1's 2000 us of host idle lie in step 2 of 4: at the median rank's pace every step
    is 170 us, so the saving is 2000 / 4 = 0.500 ms a step, of a job's step whose mean over the four is
    (3 x 170 + 2170) / 4 = 670 us: 74.6 %. Before, the excess was averaged over the steps that had host idle
    at all (step 2 alone: '+2.000 ms' a step) and the percent taken of the median step (170 us): 294 %."""
    from tracekit.commands.advise import advise

    run = _one_stall_job(tmp_path)
    table = advise(run)
    (late,) = [f for f in table.to_pylist() if f["finding"].startswith("late rank")]
    assert late["finding"] == "late rank 1 (host idle)", late
    assert late["saving_ms"] == pytest.approx(0.500, abs=1e-6)
    assert late["saving_pct"] == pytest.approx(100 * 0.5 / 0.670, abs=1e-6)
    assert "rank 1: host idle +0.500 ms (in step 2 of 4: +2.000 ms)" in late["evidence"], late
    from tracekit.table_meta import note_of
    assert ("percents are of its mean over those steps, 0.670 ms (0.170 to 2.170 ms), as each saving is a mean "
            "over them") in note_of(table)


def _threads_run_ahead_job(tmp_path):
    """Three ranks, four steps, no synchronize (us). A rank's step: ten aten::mm ops of 30 us (rank 2: 40 us)
    back to back, each launching at its start + 3 a 3 us kernel that runs from its start + 5; then
    c10d::allreduce_ [+300, +310) (rank 2: [+400, +410)) launching the all-reduce at +305 (+405) on stream
    20. The step is 310 us (rank 2: 410), its ProfilerStep the thread's whole time. An all-reduce kernel
    starts at its launch + 2 or when the one before it on stream 20 ends, whichever is later, and every
    rank's ends 20 us after rank 2's starts: ranks 0 and 1 run ahead, their all-reduces waiting 100, 200,
    300, 400 us for rank 2's while their threads never stop."""
    args = {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float",
            "Group size": 3, "Process Group Name": "0", "Process Group Description": "default_pg",
            "Process Group Ranks": "[0, 1, 2]"}
    per = {r: [] for r in range(3)}
    op = {0: 30, 1: 30, 2: 40}
    stream_free = {r: 0 for r in range(3)}
    for s in (1, 2, 3, 4):
        start = {r: (s - 1) * (10 * op[r] + 10) for r in range(3)}
        arrive = {r: max(start[r] + 10 * op[r] + 7, stream_free[r]) for r in range(3)}
        end = arrive[2] + 20
        for r in range(3):
            c, evs = start[r], per[r]
            evs.append(step(s, c, 10 * op[r] + 10))
            for i in range(10):
                t = c + i * op[r]
                evs += [cpu_op("aten::mm", t, op[r])] + kernel("elementwise_kernel", t + 5, 3, launch=(t + 3, 1))
            evs += [cpu_op("c10d::allreduce_", c + 10 * op[r], 10)]
            evs += kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", arrive[r], end - arrive[r], stream=20,
                          launch=(c + 10 * op[r] + 5, 1), **args)
            stream_free[r] = end
    return _ingest(tmp_path, per)


def test_a_thread_that_never_stops_is_host_bound_though_its_gpu_waits(tmp_path):
    """_threads_run_ahead_job: ranks 0 and 1's threads run their ops the whole of every ProfilerStep (310 of
    310 us) while their GPUs wait at the all-reduces, more than the rest of their GPU idle (their last step's
    window runs to the GPU's end): the waiting rule read them 'waiting', and
    advise named no host-bound finding. An NCCL call never blocks the thread, so nothing made it wait: every
    rank is host-bound (rank 2 the slowest host, which its late-rank finding names)."""
    from tracekit.commands.advise import advise

    run = _threads_run_ahead_job(tmp_path)
    bound = {r["rank"]: r for r in tracekit.report(run, "bound", by="rank").to_pylist()}
    assert {r: b["bound"] for r, b in bound.items()} == {0: "host", 1: "host", 2: "host"}
    # their GPUs waited: the arrivals 100 + 200 + 300 + 400 us apart, less the next steps' kernels that run
    # meanwhile on the other stream (waiting counts only time with no compute)
    assert 0.9 < bound[0]["wait_ms"] < 1.0 and bound[0]["host_busy_ms"] == pytest.approx(1.240, abs=1e-6)
    rows = advise(run).to_pylist()
    assert rows[0]["finding"].startswith("host-bound on every rank"), rows[0]
    assert any(f["finding"].startswith("late rank 2") for f in rows), rows


def test_a_kernel_that_ends_inside_its_slow_launch_call_does_not_block_the_host(tmp_path):
    """One rank, three steps of 320 us (us): ten aten::mm ops [c+30i, c+30i+30), each calling
    cudaLaunchKernel [c+30i+3, c+30i+13) (10 us) of a 3 us kernel that runs [c+30i+7, c+30i+10): it starts and
    ends before its call returns, as on a GPU with nothing queued; cudaStreamSynchronize [c+300, c+301).
    The thread is blocked only in the synchronize (1 us a step) and busy in its ops (300 us a step); the
    launches are its work, not waits for their kernels (each read as the host blocked on its kernel: 10 x
    10 us a step more blocked, 100 less busy)."""
    run = _launches_job(tmp_path, "elementwise_kernel", call=10, at=7, length=3, sync=1)
    (b,) = tracekit.report(run, "bound", by="rank").to_pylist()
    assert (b["bound"], b["host_blocked_ms"], b["host_busy_ms"]) == \
        ("host", pytest.approx(0.003, abs=1e-9), pytest.approx(0.900, abs=1e-9))  # the ops: 3 x 300 us


def _slow_calls_job(tmp_path):
    """Three ranks, three steps (us; w: the step's start). Ten aten::mm ops back to back, each of 30 us
    whose cudaLaunchKernel runs [+3, +13) (rank 1: ops of 60 us, calls [+3, +43): its launches are 30 us
    slower, its other CPU time the same), each launching a 3 us kernel 2 us after its call returns; then
    c10d::allreduce_ [+300, +310) (rank 1: [+600, +610)) launching the all-reduce at +305 (+605): every
    rank's kernel starts at its launch + 3 and ends 50 us after rank 1's starts; cudaStreamSynchronize from
    the op's end to the all-reduce's end + 5, and the step ends 2 us later: 665 us on every rank."""
    args = {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float",
            "Group size": 3, "Process Group Name": "0", "Process Group Description": "default_pg",
            "Process Group Ranks": "[0, 1, 2]"}
    per = {r: [] for r in range(3)}
    w = 0
    for s in (1, 2, 3):
        end = w + 600 + 5 + 3 + 50  # rank 1's arrival + the transfer
        for r in range(3):
            op, call = (60, 40) if r == 1 else (30, 10)
            evs = per[r]
            evs.append(step(s, w, end + 5 + 2 - w))
            for i in range(10):
                t = w + i * op
                k, rt = kernel("elementwise_kernel", t + 3 + call + 2, 3, launch=(t + 3, 1))
                rt["dur"] = call
                evs += [cpu_op("aten::mm", t, op), k, rt]
            a = w + 10 * op
            evs += [cpu_op("c10d::allreduce_", a, 10)]
            evs += kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", a + 8, end - (a + 8), stream=20,
                          launch=(a + 5, 1), **args)
            evs += [cpu_op("cudaStreamSynchronize", a + 10, end + 5 - (a + 10), cat="cuda_runtime")]
        w = end + 7
    return _ingest(tmp_path, per)


def test_a_rank_with_slow_launch_calls_is_late_and_fixing_it_saves_them(tmp_path):
    """_slow_calls_job: rank 1's launch calls take 30 us more each, 300 us a step, and the others wait for it
    in their synchronize. At the median rank's pace (its CPU work, launch calls included: 30 us an op) it
    reaches its all-reduce as they do, at +308, which ends at +358, and every step is 365 us: 300 us
    shorter. The calls were graph nodes that the pace never touched: whatif --fix-rank 1 changed nothing and
    advise named no late rank (it pointed to that whatif)."""
    from tracekit.commands.advise import advise
    from tracekit.graph import counterfactual as cf

    run = _slow_calls_job(tmp_path)
    sp = cf.split(run)
    dur, gap = cf.ranks_at_pace(sp, [1])
    assert cf.job_step_ms(sp.replay()) == pytest.approx(0.665, abs=1e-6)
    # the pace scales each piece of rank 1's work before its all-reduce by one factor (310 / 610 us of it),
    # the 4.5 us between its all-reduce's launch and its synchronize included: it arrives 2.2 us after the
    # others (the approximation at_pace documents), so within 3 us of the hand-worked step
    assert cf.job_step_ms(sp.replay(durations=dur, gaps=gap)) == pytest.approx(0.365, abs=0.003)
    late = [f for f in advise(run).to_pylist() if f["finding"].startswith("late rank")]
    assert [f["finding"] for f in late] == ["late rank 1 (host-bound in aten::mm)"], late
    assert late[0]["saving_ms"] == pytest.approx(0.300, abs=0.003)


def test_a_gpu_ranks_stall_is_host_idle_on_the_critical_path(tmp_path):
    """_one_stall_job's step 2: rank 1 starts its work 2000 us into the step, and the others' all-reduces
    wait for it: the path runs through rank 1's 2000 us without an op, which is host idle (advise and
    bound say so), not 'launch/CPU' (the unsplit graph's CPU between its nodes, as it read on GPU runs)."""
    run = _one_stall_job(tmp_path)
    rows = [r for r in tracekit.report(run, "critical_path").to_pylist() if r["step"] == 2]
    idle = [r for r in rows if r["cause"] == "host idle"]
    assert [(r["rank"], r["ns"]) for r in idle] == [(1, 2_000_000)], rows


def _side_streams_job(tmp_path, late_gemm=GEMM):
    """Four ranks, three steps of 720 us (us; S the step's start). aten::mm [S, S+5) launches (at S+1) a gemm
    on stream 7 [S+10, S+10+G), G 300 us (rank 2: 600); three aten::add [S+6+3k, S+8+3k) launch (at S+7+3k)
    an elementwise kernel each on streams 8, 9, 10, all [S+25, S+310) (285 us, every rank alike);
    cudaStreamWaitEvent [S+20, S+21), so that the all-reduce (c10d::allreduce_ [S+30, S+35), launched at
    S+31, stream 20) starts when the last op before it on each other stream ends: the gemm, at S+10+G. Rank
    2 arrives last, at S+610; the transfer ends at S+710 on every rank; cudaStreamSynchronize [S+40, S+715);
    the step ends at S+720. ``late_gemm``: the name of rank 2's gemm (another algorithm than the others')."""
    args = {**ARGS, "Group size": 4, "Process Group Ranks": "[0, 1, 2, 3]"}
    per = {}
    for r in range(4):
        g = 600 if r == 2 else 300
        evs = per[r] = []
        for i in range(3):
            s = 720 * i
            evs += [step(i + 1, s, 720), cpu_op("aten::mm", s, 5)]
            evs += kernel(late_gemm if r == 2 else GEMM, s + 10, g, stream=7, launch=(s + 1, 1))
            for k in range(3):
                evs.append(cpu_op("aten::add", s + 6 + 3 * k, 2))
                evs += kernel("vectorized_elementwise_kernel", s + 25, 285, stream=8 + k, launch=(s + 7 + 3 * k, 1))
            evs.append(cpu_op("cudaStreamWaitEvent", s + 20, 1, cat="cuda_runtime"))
            evs.append(cpu_op("c10d::allreduce_", s + 30, 5))
            evs += kernel(NCCL, s + 10 + g, 710 - 10 - g, stream=20, launch=(s + 31, 1), **args)
            evs.append(cpu_op("cudaStreamSynchronize", s + 40, 675, cat="cuda_runtime"))
    return _ingest(tmp_path, per)


def test_a_slow_kernel_beside_other_streams_is_paced_kernel_by_kernel(tmp_path):
    """_side_streams_job: with rank 2's gemm at the others' 300 us, every rank arrives at S+310, the transfer
    ends at S+410, the synchronize at S+415 and the step at S+420: 300 us saved of 720, and rank 2 is late,
    GPU compute-bound. The elementwise kernels beside the gemm run at the pace already and stay 285 us.
    (Scaling the segment's kernels by one factor, 1155 / 1455 us of rank 2's compute, made the gemm 476 us
    and the others 226: 124 us saved; a second attacker's finding.)"""
    from tracekit.commands.advise import advise
    from tracekit.graph import counterfactual as cf

    run = _side_streams_job(tmp_path)
    sp = cf.split(run)
    g = sp.graph
    assert cf.job_step_ms(sp.replay()) == pytest.approx(0.720, abs=1e-6)
    dur, gap = cf.ranks_at_pace(sp, [2])
    changed = {(str(g.name[i]), int(g.dur_ns[i]), int(dur[i])) for i in (dur != g.dur_ns).nonzero()[0]}
    assert changed == {(GEMM, 600_000, 300_000)}, changed
    assert cf.job_step_ms(sp.replay(durations=dur, gaps=gap)) == pytest.approx(0.420, abs=1e-6)
    late = [f for f in advise(run).to_pylist() if f["finding"].startswith("late rank")]
    assert [f["finding"] for f in late] == ["late rank 2 (GPU compute-bound)"], late
    assert late[0]["saving_ms"] == pytest.approx(0.300, abs=1e-6)


def test_steps_whose_gpu_work_overlaps_have_paths_that_do_not(tmp_path):
    """One rank, no synchronize, the host a step ahead of its GPU (us): step 1 [0, 100) runs aten::mm [5, 15),
    which launches (at 10) a gemm that runs [50, 250); step 2 [100, 200) runs aten::mm [105, 115), which
    launches (at 110) a gemm queued behind the first on stream 7: [250, 450). Step 1's path ends at 250 (its
    gemm's end), step 2's at 450; step 2 begins where step 1's last work ends, 250, so its path is its gemm,
    200 us, and the two paths tile [0, 450). (From step 2's ProfilerStep start, 100, its path held step 1's
    gemm from 100 to 250 too: 350 us, on both steps' paths.) The same holds for a pipeline's stages, a later
    stage starting its step while the first still runs the previous step's backward (an attacker's case)."""
    evs = [step(1, 0, 100), cpu_op("aten::mm", 5, 10), step(2, 100, 100), cpu_op("aten::mm", 105, 10)]
    evs += kernel(GEMM, 50, 200, launch=(10, 1)) + kernel(GEMM, 250, 200, launch=(110, 1))
    run = _ingest(tmp_path, {0: evs})
    rows = tracekit.report(run, "critical_path").to_pylist()
    assert {s: sum(r["ns"] for r in rows if r["step"] == s) for s in (1, 2)} == {1: 250_000, 2: 200_000}, rows
    assert [(r["cause"].startswith("compute"), r["ns"]) for r in rows if r["step"] == 2] == [(True, 200_000)]


def _tp_dp_job(tmp_path):
    """Four ranks, tensor-parallel groups {0, 1} and {2, 3}, data-parallel groups {0, 2} and {1, 3}; three
    steps of 720 us (us; S the step's start). Each rank: aten::mm [S, S+5) launches (at S+1) gemm 1 on stream
    7 [S+10, S+210) (rank 3: [S+10, S+360)); cudaStreamWaitEvent [S+6, S+7); the TP all-reduce (op [S+8, S+13),
    launched at S+9, stream 20) from gemm 1's end: 50 us once both ranks arrived, [S+210, S+260) on ranks 0, 1,
    ending at S+410 on ranks 2, 3 (rank 3 arrives at S+360, rank 2 waits from S+210); cudaStreamWaitEvent
    [S+14, S+15); aten::mm [S+16, S+21) launches (at S+17) gemm 2, 200 us from the TP all-reduce's end;
    cudaStreamWaitEvent [S+22, S+23); the DP all-reduce (op [S+24, S+29), launched at S+25) from gemm 2's end,
    100 us once both arrive: ranks 0, 1 arrive at S+460, ranks 2, 3 at S+610, and all end at S+710;
    cudaStreamSynchronize [S+30, S+715); the step ends at S+720."""
    def group(name, desc, ranks):
        return {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float",
                "Group size": 2, "Process Group Name": name, "Process Group Description": desc,
                "Process Group Ranks": str(ranks)}
    tp = {0: group("1", "mesh_tp", [0, 1]), 1: group("1", "mesh_tp", [0, 1]),
          2: group("2", "mesh_tp", [2, 3]), 3: group("2", "mesh_tp", [2, 3])}
    dp = {0: group("3", "mesh_dp", [0, 2]), 2: group("3", "mesh_dp", [0, 2]),
          1: group("4", "mesh_dp", [1, 3]), 3: group("4", "mesh_dp", [1, 3])}
    per = {}
    for r in range(4):
        evs = per[r] = []
        g1_end = 360 if r == 3 else 210
        tp_end = 410 if r >= 2 else 260
        g2_end = tp_end + 200
        for i in range(3):
            s = 720 * i
            evs += [step(i + 1, s, 720), cpu_op("aten::mm", s, 5)]
            evs += kernel(GEMM, s + 10, g1_end - 10, launch=(s + 1, 1))
            evs.append(cpu_op("cudaStreamWaitEvent", s + 6, 1, cat="cuda_runtime"))
            evs.append(cpu_op("c10d::allreduce_", s + 8, 5))
            evs += kernel(NCCL, s + g1_end, tp_end - g1_end, stream=20, launch=(s + 9, 1), **tp[r])
            evs.append(cpu_op("cudaStreamWaitEvent", s + 14, 1, cat="cuda_runtime"))
            evs.append(cpu_op("aten::mm", s + 16, 5))
            evs += kernel(GEMM, s + tp_end, 200, launch=(s + 17, 1))
            evs.append(cpu_op("cudaStreamWaitEvent", s + 22, 1, cat="cuda_runtime"))
            evs.append(cpu_op("c10d::allreduce_", s + 24, 5))
            evs += kernel(NCCL, s + g2_end, 710 - g2_end, stream=20, launch=(s + 25, 1), **dp[r])
            evs.append(cpu_op("cudaStreamSynchronize", s + 30, 685, cat="cuda_runtime"))
    return _ingest(tmp_path, per)


def test_a_rank_late_because_it_waited_for_another_is_not_the_straggler(tmp_path):
    """_tp_dp_job: rank 2 arrives last at its DP all-reduce (150 us after rank 0) only because it waited 150 us
    for rank 3 at its TP all-reduce: with rank 3's gemm at 200 us, rank 2's TP all-reduce ends at S+260, it
    arrives at S+460 with rank 0, both all-reduces end at S+560 and the step at S+570: 150 us saved of 720.
    advise names rank 3 late (GPU compute-bound, 0.150 ms), and no straggler finding sends the user after
    rank 2 (it read "nothing it runs before its launches explains it ... data loading, host, clocks": an
    attacker's case); the straggler rows say rank 2 waits 0.150 ms a step itself, most for rank 3."""
    from tracekit.commands.advise import advise

    run = _tp_dp_job(tmp_path)
    rows = advise(run).to_pylist()
    late = [f for f in rows if f["finding"].startswith("late rank")]
    assert [(f["finding"], round(f["saving_ms"], 6)) for f in late] == [("late rank 3 (GPU compute-bound)", 0.150)]
    assert not [f for f in rows if f["finding"].startswith("straggler")], rows
    from tracekit import sql_files
    strag = {r["rank"]: r for r in run.sql(sql_files.load("reports", "_advise_straggler").text).to_pylist()}
    assert (strag[2]["own_wait_ms"], strag[2]["waited_for_rank"]) == (pytest.approx(0.150, abs=1e-9), 3)
    assert strag[3]["own_wait_ms"] == 0 and list(strag)[0] == 3  # the source first


def _pipeline_job(tmp_path):
    """Two pipeline stages, one micro-batch, three steps (us; S = 660 (i - 1) for step i). Stage 0 (rank 0),
    step [S, S+660): forward gemm [S+10, S+110) (stream 7); send of the activations [S+110, S+130) (stream
    20, after the forward: cudaStreamWaitEvent); receive of the gradients [S+130, S+450), whose sender
    arrives at S+430; backward gemm [S+450, S+650); cudaStreamSynchronize [S+60, S+655). Stage 1 (rank 1),
    step [T, S+460), T = 0 in step 1, else S - 200 (its previous step's end): receive [T+10, S+130) (the
    sender arrives at S+110); forward [S+130, S+230); backward [S+230, S+430); send of the gradients
    [S+430, S+450); cudaStreamSynchronize [T+60, S+455). No rank is late: each waits for the other's stage
    (rank 0 300 us a step, rank 1 100 in step 1 and 300 after), the schedule's bubble."""
    def p2p(kind, me, peer):
        return {"Collective name": kind, "In msg nelems": 4096, "Out msg nelems": 4096, "dtype": "Float",
                "Group size": 2, "Process Group Name": "1", "Process Group Description": "PP",
                "Process Group Ranks": "[0, 1]", "Src Rank": peer if kind == "recv" else me,
                "Dst Rank": me if kind == "recv" else peer}
    sr = "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)"
    per = {0: [], 1: []}
    for i in range(3):
        s = 660 * i
        e = per[0]
        e += [step(i + 1, s, 660), cpu_op("aten::mm", s, 5)] + kernel(GEMM, s + 10, 100, launch=(s + 1, 1))
        e.append(cpu_op("cudaStreamWaitEvent", s + 6, 1, cat="cuda_runtime"))
        e += [cpu_op("c10d::send", s + 8, 5)] + kernel(sr, s + 110, 20, stream=20, launch=(s + 9, 1),
                                                       **p2p("send", 0, 1))
        e += [cpu_op("c10d::recv_", s + 14, 5)] + kernel(sr, s + 130, 320, stream=20, launch=(s + 15, 1),
                                                         **p2p("recv", 0, 1))
        e.append(cpu_op("cudaStreamWaitEvent", s + 20, 1, cat="cuda_runtime"))
        e += [cpu_op("aten::mm", s + 22, 5)] + kernel(GEMM, s + 450, 200, launch=(s + 23, 1))
        e.append(cpu_op("cudaStreamSynchronize", s + 60, 595, cat="cuda_runtime"))
        t = 0 if i == 0 else s - 200
        e = per[1]
        e += [step(i + 1, t, s + 460 - t), cpu_op("c10d::recv_", t + 8, 5)]
        e += kernel(sr, t + 10, s + 130 - (t + 10), stream=20, launch=(t + 9, 1), **p2p("recv", 1, 0))
        e.append(cpu_op("cudaStreamWaitEvent", t + 14, 1, cat="cuda_runtime"))
        e += [cpu_op("aten::mm", t + 16, 5)] + kernel(GEMM, s + 130, 100, launch=(t + 17, 1))
        e += [cpu_op("aten::mm", t + 22, 5)] + kernel(GEMM, s + 230, 200, launch=(t + 23, 1))
        e.append(cpu_op("cudaStreamWaitEvent", t + 28, 1, cat="cuda_runtime"))
        e += [cpu_op("c10d::send", t + 30, 5)] + kernel(sr, s + 430, 20, stream=20, launch=(t + 31, 1),
                                                        **p2p("send", 1, 0))
        e.append(cpu_op("cudaStreamSynchronize", t + 60, s + 455 - (t + 60), cat="cuda_runtime"))
    return _ingest(tmp_path, per)


def test_a_pipelines_bubble_is_said_to_be_its_schedules(tmp_path):
    """_pipeline_job: both ranks wait at the pipeline's sends and receives only (all of their waiting), and
    neither is late: fixing either saves nothing. advise's lead finding says the waiting is the pipeline's
    bubble, which the schedule sets, not "see the late ranks" (an attacker's case: a GPipe job read as
    waiting for late ranks)."""
    from tracekit.commands.advise import advise
    from tracekit.graph import counterfactual as cf

    run = _pipeline_job(tmp_path)
    waits = {(r["rank"], r["collective"]): r["ns"] for r in run.sql(
        "SELECT rank, collective, sum(wait_ns) AS ns FROM collective_waits GROUP BY ALL").to_pylist()}
    assert waits == {(0, "send"): 0, (0, "recv"): 900_000, (1, "recv"): 700_000, (1, "send"): 0}, waits
    sp = cf.split(run)
    for r in (0, 1):
        dur, gap = cf.ranks_at_pace(sp, [r])
        assert cf.job_step_ms(sp.replay(durations=dur, gaps=gap)) == pytest.approx(cf.job_step_ms(sp.replay()))
    lead = advise(run).to_pylist()[0]
    assert lead["finding"].startswith("waiting for other ranks on every rank"), lead
    assert "100 % of that waiting at point-to-point" in lead["evidence"], lead
    assert lead["change"].startswith("the ranks wait mostly at the pipeline's sends and receives: its bubble"), lead



def _queue_full_job(tmp_path):
    """Two tensor-parallel ranks whose GPUs are the bound and whose threads run a step ahead, blocked in
    launch calls on a full launch queue; four profiled steps, no synchronize (us; G = 200 + 720 j, the GPU
    start of step j). On the GPU, step j: ten gemms back to back from G, 50 us each on rank 0, 70 on rank 1
    (stream 7), then the all-reduce (stream 20, after the last gemm: cudaStreamWaitEvent), from G+500 on
    rank 0, G+700 on rank 1, ending at G+720 on both (20 us of transfer once rank 1 arrives); the next step's
    first gemm waits for it (cudaStreamWaitEvent). Step 0 is launched before the first ProfilerStep by short
    calls (2 us, from 100). Host step j (1 to 4) is [G'+3, G'+723), G' = G - 720 (the GPU start of step j-1):
    ten aten::mm ops, the k-th [G'+gk+3, G'+gk+g+3) (g the rank's gemm time), its cudaLaunchKernel
    [G'+gk+4, G'+gk+g+2) returning 2 us after step j-1's k-th gemm ends (its slot freed), then
    c10d::allreduce_ [G'+10g+3, G'+723), its launch [G'+10g+4, G'+722) returning 2 us after step j-1's
    all-reduce ends. Rank 0's GPU is busy 520 us of every 720 and waits 200 for rank 1; it never idles with
    nothing queued. Rank 0's thread is in its ops all step, blocked in its launches but for 22 us a step:
    its host is not the bound (rank 0 waits for rank 1, whose GPU is)."""
    tp = {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float",
          "Group size": 2, "Process Group Name": "0", "Process Group Description": "default_pg",
          "Process Group Ranks": "[0, 1]"}
    per = {0: [], 1: []}
    for r, g in ((0, 50), (1, 70)):
        evs = per[r]
        for j in range(5):  # the GPU's steps 0 (launched before the profile) to 4
            gs, hs = 200 + 720 * j, 200 + 720 * (j - 1)  # the GPU's start of step j; its host step's base
            if j:
                evs.append(step(j, hs + 3, 720))
            for k in range(11):
                ev_ts, ev_dur = (hs + g * k + 3, g) if k < 10 else (hs + 10 * g + 3, 720 - 10 * g)
                call = (hs + g * k + 4, ev_dur - 2) if j else (100 + 8 * k + 1, 2)
                if j:
                    evs.append(cpu_op("aten::mm" if k < 10 else "c10d::allreduce_", ev_ts, ev_dur))
                if k in (0, 10):  # after the other stream's last op
                    evs.append(cpu_op("cudaStreamWaitEvent", call[0] - 0.8, 0.5, cat="cuda_runtime"))
                if k < 10:
                    k_ev, rt = kernel(GEMM, gs + g * k, g, launch=(call[0], 1))
                else:
                    k_ev, rt = kernel(NCCL, gs + 10 * g, 720 - 10 * g, stream=20, launch=(call[0], 1), **tp)
                rt["dur"] = call[1]
                evs += [k_ev, rt]
    return _ingest(tmp_path, per)


def test_a_thread_blocked_in_a_full_launch_queue_is_not_the_bound(tmp_path):
    """_queue_full_job: each launch call of steps 1 to 4 waits for room in the queue: rank 0's thread is
    blocked 48 us in each gemm's launch and 218 us in the all-reduce's (698 of its 720 us), busy 22 us. Its
    GPU is busy 520 of 720 us and waits 200 for rank 1: rank 0 waits (it read 'host': its thread in its ops
    all step, and advise said host-bound); rank 1's GPU is busy all step. With rank 1's gemms at rank 0's 50
    us, both GPUs run a step in 520 us, and the launches, which wait for them, return as much sooner: the
    job's step 200 us shorter (its threads' launch calls were fixed host work: the saving was 0.177)."""
    from tracekit.commands.advise import advise
    from tracekit.graph import counterfactual as cf

    run = _queue_full_job(tmp_path)
    bound = {r["rank"]: r for r in tracekit.report(run, "bound", by="rank").to_pylist()}
    assert {r: b["bound"] for r, b in bound.items()} == {0: "waiting", 1: "GPU"}, bound
    # per step, in the window of the step's ProfilerStep (the last one's runs on to its GPU work's end)
    steps = {(r["rank"], r["step"]): r for r in tracekit.report(run, "bound").to_pylist()}
    assert (steps[(0, 2)]["host_blocked_ms"], steps[(0, 2)]["host_busy_ms"]) == \
        (pytest.approx(0.698, abs=1e-9), pytest.approx(0.022, abs=1e-9))
    rows = advise(run).to_pylist()
    assert not [f for f in rows if "host-bound" in f["finding"]], rows
    sp = cf.split(run)
    dur, gap = cf.ranks_at_pace(sp, [1])
    saving = cf.job_step_ms(sp.replay()) - cf.job_step_ms(sp.replay(durations=dur, gaps=gap))
    assert saving == pytest.approx(0.200, abs=1e-6)


def _host_op_job(tmp_path):
    """Three ranks, three steps (us; S the step's start, D = 300 on rank 1 in step 2, else 0). Rank 1 runs
    aten::nonzero [S, S+300) in step 2 before anything else (its thread busy, no launch). Then, from S+D:
    aten::mm [+0, +5) launches (at +1) a gemm [+10, +310) on stream 7; aten::add [+6, +9) launches (at +7) a
    kernel queued behind it, [+310, +360); cudaStreamWaitEvent [+12, +13); c10d::allreduce_ [+14, +19)
    launches (at +15) the all-reduce on stream 20 from +360, which ends 100 us after the last rank's
    arrival; cudaStreamWaitEvent [+24, +25); aten::add_ [+20, +23) launches (at +21) the optimizer's kernel,
    50 us on stream 7 from the all-reduce's end; cudaStreamSynchronize until 2 us after it, and the step
    ends 8 us later. Steps 1 and 3: 520 us; step 2: every rank's all-reduce ends at S+760 (rank 1 arrives at
    S+660), the step at S+820."""
    per = {r: [] for r in range(3)}
    s = 0
    for i in (1, 2, 3):
        late = 300 if i == 2 else 0
        end = s + late + 460
        for r in range(3):
            d = late if r == 1 else 0
            evs, b = per[r], s + d
            evs.append(step(i, s, end + 60 - s))
            if d:
                evs.append(cpu_op("aten::nonzero", s, d))
            evs += [cpu_op("aten::mm", b, 5)] + kernel(GEMM, b + 10, 300, launch=(b + 1, 1))
            evs += [cpu_op("aten::add", b + 6, 3)] + kernel("elementwise_kernel", b + 310, 50, launch=(b + 7, 1))
            evs.append(cpu_op("cudaStreamWaitEvent", b + 12, 1, cat="cuda_runtime"))
            evs += [cpu_op("c10d::allreduce_", b + 14, 5)]
            evs += kernel(NCCL, b + 360, end - (b + 360), stream=20, launch=(b + 15, 1), **ARGS)
            evs += [cpu_op("aten::add_", b + 20, 3)] + kernel("multi_tensor_apply_kernel", end, 50,
                                                               launch=(b + 21, 1))
            evs.append(cpu_op("cudaStreamWaitEvent", b + 24, 1, cat="cuda_runtime"))
            evs.append(cpu_op("cudaStreamSynchronize", b + 30, end + 52 - (b + 30), cat="cuda_runtime"))
        s = end + 60
    return _ingest(tmp_path, per)


def test_a_late_ranks_extra_op_is_cut_where_it_lies(tmp_path):
    """_host_op_job: at the others' pace rank 1 launches its gemm at S+1 in step 2 too, and the step is 520
    us: 300 us saved in one of three steps, 0.100 ms a step. (Its work scaled by one factor over the
    segment, most of the 300 us stayed before its first launch: an attacker's case, 0.087 of 0.099.)"""
    from tracekit.commands.advise import advise
    from tracekit.graph import counterfactual as cf

    run = _host_op_job(tmp_path)
    sp = cf.split(run)
    dur, gap = cf.ranks_at_pace(sp, [1])
    saving = cf.job_step_ms(sp.replay()) - cf.job_step_ms(sp.replay(durations=dur, gaps=gap))
    assert saving == pytest.approx(0.100, abs=1e-6)
    late = [f for f in advise(run).to_pylist() if f["finding"].startswith("late rank")]
    assert [f["finding"] for f in late] == ["late rank 1 (host-bound in aten::nonzero)"], late
    assert late[0]["saving_ms"] == pytest.approx(0.100, abs=1e-6)


def _pipeline_loss_job(tmp_path):
    """Two pipeline stages, one micro-batch, and the loss all-reduced over both at the step's end; three steps
    of 670 us on both ranks (us; S = 670 (i - 1)). Stage 0 (rank 0): forward gemm [S+10, S+110) (stream 7);
    send [S+110, S+130) (stream 20, after the forward: cudaStreamWaitEvent); receive of the gradients
    [S+130, S+450) (the sender arrives at S+430); backward [S+450, S+650) (after it: cudaStreamWaitEvent);
    the loss all-reduce (stream 20, after the backward) [S+650, S+660). Stage 1 (rank 1): receive [S+10,
    S+130) (the sender arrives at S+110); forward [S+130, S+230); backward [S+230, S+430); send [S+430,
    S+450); the loss all-reduce from S+450 on stream 20, waiting for rank 0 until S+650: [S+450, S+660). Both
    synchronize [S+60, S+665). Rank 0 arrives last at the all-reduce, 200 us after rank 1, only because it
    waited 300 us at its receive for rank 1's backward: the schedule's drain, no late rank."""
    def p2p(kind, me, peer):
        return {"Collective name": kind, "In msg nelems": 4096, "Out msg nelems": 4096, "dtype": "Float",
                "Group size": 2, "Process Group Name": "1", "Process Group Description": "PP",
                "Process Group Ranks": "[0, 1]", "Src Rank": peer if kind == "recv" else me,
                "Dst Rank": me if kind == "recv" else peer}
    loss = {**ARGS, "Group size": 2, "Process Group Ranks": "[0, 1]"}
    sr = "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)"

    def wait(t):
        return cpu_op("cudaStreamWaitEvent", t, 1, cat="cuda_runtime")
    per = {0: [], 1: []}
    for i in range(3):
        s = 670 * i
        e = per[0]
        e += [step(i + 1, s, 670), cpu_op("aten::mm", s, 5)] + kernel(GEMM, s + 10, 100, launch=(s + 1, 1))
        e += [wait(s + 6), cpu_op("c10d::send", s + 8, 5)]
        e += kernel(sr, s + 110, 20, stream=20, launch=(s + 9, 1), **p2p("send", 0, 1))
        e += [cpu_op("c10d::recv_", s + 14, 5)]
        e += kernel(sr, s + 130, 320, stream=20, launch=(s + 15, 1), **p2p("recv", 0, 1))
        e += [wait(s + 20), cpu_op("aten::mm", s + 22, 5)] + kernel(GEMM, s + 450, 200, launch=(s + 23, 1))
        e += [wait(s + 26), cpu_op("c10d::allreduce_", s + 28, 5)]
        e += kernel(NCCL, s + 650, 10, stream=20, launch=(s + 29, 1), **loss)
        e.append(cpu_op("cudaStreamSynchronize", s + 60, 605, cat="cuda_runtime"))
        e = per[1]
        e += [step(i + 1, s, 670), cpu_op("c10d::recv_", s + 8, 5)]
        e += kernel(sr, s + 10, 120, stream=20, launch=(s + 9, 1), **p2p("recv", 1, 0))
        e += [wait(s + 14), cpu_op("aten::mm", s + 16, 5)] + kernel(GEMM, s + 130, 100, launch=(s + 17, 1))
        e += [cpu_op("aten::mm", s + 22, 5)] + kernel(GEMM, s + 230, 200, launch=(s + 23, 1))
        e += [wait(s + 28), cpu_op("c10d::send", s + 30, 5)]
        e += kernel(sr, s + 430, 20, stream=20, launch=(s + 31, 1), **p2p("send", 1, 0))
        e += [cpu_op("c10d::allreduce_", s + 36, 5)]
        e += kernel(NCCL, s + 450, 210, stream=20, launch=(s + 37, 1), **loss)
        e.append(cpu_op("cudaStreamSynchronize", s + 60, 605, cat="cuda_runtime"))
    return _ingest(tmp_path, per)


def test_a_stage_late_to_the_loss_by_the_pipelines_drain_is_not_a_straggler(tmp_path):
    """_pipeline_loss_job: rank 0 arrives last at every loss all-reduce (rank 1 waits 200 us a step for it),
    but its lateness is its own 300 us a step waiting at its receive for rank 1: the schedule, which no rank
    can be fixed out of. advise names no straggler (it said "straggler: rank 0 arrives last ... find why
    rank 0 is late: ... data loading, host, clocks", confidence high: an attacker's case)."""
    from tracekit import sql_files
    from tracekit.commands.advise import advise

    run = _pipeline_loss_job(tmp_path)
    top = run.sql(sql_files.load("reports", "_advise_straggler").text).to_pylist()[0]
    assert (top["rank"], top["times_last"], top["cost_ms"]) == (0, 3, pytest.approx(0.200, abs=1e-9)), top
    assert (top["own_wait_ms"], top["own_p2p_wait_ms"], top["waited_for_rank"]) == \
        (pytest.approx(0.300, abs=1e-9), pytest.approx(0.300, abs=1e-9), 1)
    rows = advise(run).to_pylist()
    assert not [f for f in rows if f["finding"].startswith(("straggler", "late rank"))], rows


def _launch_loop(tmp_path, steps, period, op, kname, at, length, sync):
    """One rank, ``steps`` steps of ``period`` us (S the step's start): twenty ops ``op`` = (name, us) back to back,
    the k-th from S + k us-of-op, each calling cudaLaunchKernel from its start + 1 for the op's length - 2
    us, whose ``length`` us kernel ``kname`` runs from the op's start + ``at``; cudaStreamSynchronize
    ``sync`` = (from S+, us)."""
    name, per = op
    evs = []
    for i in range(steps):
        s = period * i
        evs.append(step(i + 1, s, period))
        for k in range(20):
            t = s + per * k
            k_ev, rt = kernel(kname, t + at, length, launch=(t + 1, 1))
            rt["dur"] = per - 2
            evs += [cpu_op(name, t, per), k_ev, rt]
        evs.append(cpu_op("cudaStreamSynchronize", s + sync[0], sync[1], cat="cuda_runtime"))
    return _ingest(tmp_path, {0: evs})


def _launch_paced_job(tmp_path):
    """One rank, three steps of 510 us (us; S the step's start): twenty aten::add ops back to back, the k-th
    [S+25k, S+25k+25), each calling cudaLaunchKernel [S+25k+1, S+25k+24) whose 23 us kernel runs [S+25k+6,
    S+25k+29), before the call returns: the GPU busy 23 us of every 25, idle 2 us before each kernel for
    its launch. cudaStreamSynchronize [S+500, S+505) (the last kernel ends at S+504); the step ends at
    S+510."""
    return _launch_loop(tmp_path, 3, 510, ("aten::add", 25), "elementwise_kernel", 6, 23, (500, 5))


def test_a_gpu_busy_most_of_the_step_but_paced_by_its_launches_is_host_bound(tmp_path):
    """_launch_paced_job: the GPU is busy 460 us of each 510 us step (90 %), but each kernel starts when its
    launch lets it. Which side paces it, each twice as fast: kernels of 11.5 us start where they did (5 us
    into their calls), the last [S+481, S+492.5), before the synchronize is called at S+500; it returns 1 us
    after it may (as measured: the kernel it waits for ended at S+504, it returned at S+505), at S+501, and
    the step ends 5 us later: 4 us sooner. A host twice as fast: the 1 us before the first call 0.5, each
    call 11.5 us and 1 us between calls, so call k starts at S+0.5+12.5k and its kernel 5 us into it
    (S+5.5+12.5k), behind the kernel before on the stream: 23 us each from S+5.5, the last ending at S+465.5;
    the synchronize returns at S+466.5 and the step ends 2.5 us later, S+469: 41 us sooner. The host paces
    the GPU: host-bound, not "GPU-bound ... a faster host would not shorten the step" (an attacker's case).
    Its saving, with the host's work and launches free (the 1 us before each call, the calls, the 5 us
    after the synchronize), every call at S and each kernel 5 us from its call's start: back to back from
    S+5 to S+465, the synchronize returns at S+466 and the step ends there: 44 us sooner (an upper bound)."""
    from tracekit.commands.advise import advise

    run = _launch_paced_job(tmp_path)
    lead = advise(run).to_pylist()[0]
    # bound, the report its evidence names, reads GPU: the title and the evidence say so (a fresh user read
    # "host-bound" against bound's "GPU" as a contradiction)
    assert lead["finding"] == "host-bound on the rank (GPUs busy 90 %, paced by the host)", lead
    assert "tracekit report RUN bound reads GPU-bound" in lead["evidence"], lead
    assert "its host paces more of the step than its GPU: replayed with their host work and launches twice as " \
        "fast the job's step ends 0.041 ms sooner, with their kernels and copies twice as fast 0.004 ms sooner" \
        in lead["evidence"], lead
    assert lead["saving_ms"] == pytest.approx(0.044, abs=1e-6)


def _spread_job(tmp_path):
    """Four ranks, three steps of 1140 us (us; S the step's start). Forty aten::add ops [S+2k, S+2k+2) each
    launch (at S+2k+1) a kernel queued on stream 7: [S+10+gk, S+10+g(k+1)), g = 20 us (rank 2: 25);
    cudaStreamWaitEvent [S+82, S+83); c10d::allreduce_ [S+84, S+89) launches (at S+85) the all-reduce on
    stream 20 from the last kernel's end (S+810; rank 2: S+1010), ending 120 us after rank 2 arrives, at
    S+1130; cudaStreamSynchronize [S+90, S+1135); the step ends at S+1140."""
    args = {**ARGS, "Group size": 4, "Process Group Ranks": "[0, 1, 2, 3]"}
    per = {r: [] for r in range(4)}
    for i in range(3):
        s = 1140 * i
        for r in range(4):
            g, evs = (25 if r == 2 else 20), per[r]
            evs.append(step(i + 1, s, 1140))
            for k in range(40):
                evs += [cpu_op("aten::add", s + 2 * k, 2)]
                evs += kernel("elementwise_kernel", s + 10 + g * k, g, launch=(s + 2 * k + 1, 1))
            evs.append(cpu_op("cudaStreamWaitEvent", s + 82, 1, cat="cuda_runtime"))
            evs.append(cpu_op("c10d::allreduce_", s + 84, 5))
            evs += kernel(NCCL, s + 10 + 40 * g, 1130 - (10 + 40 * g), stream=20, launch=(s + 85, 1), **args)
            evs.append(cpu_op("cudaStreamSynchronize", s + 90, 1045, cat="cuda_runtime"))
    return _ingest(tmp_path, per)


def test_a_late_rank_leads_an_unsized_gpu_bound(tmp_path):
    """_spread_job: ranks 0, 1, 3's GPUs are busy 920 of 1140 us (81 %: GPU-bound) and wait 200 us for rank 2,
    whose forty kernels take 5 us more each. At the others' pace rank 2 arrives at S+810, the all-reduce ends
    at S+930 and the step at S+940: 200 us saved. advise leads with that late rank and still says, after the
    sized findings, that every rank is GPU-bound (rank 2's GPU busy 1120 of 1140 us; 85 % over the four),
    which it led with, unsized, above the 17.5 % the late rank's fix saves (an attacker's case)."""
    from tracekit.commands.advise import advise

    run = _spread_job(tmp_path)
    rows = advise(run).to_pylist()
    assert rows[0]["finding"] == "late rank 2 (GPU compute-bound)", rows
    assert rows[0]["saving_ms"] == pytest.approx(0.200, abs=1e-6)
    assert [f["finding"] for f in rows if f["finding"].startswith("GPU-bound")] == \
        ["GPU-bound on every rank (GPUs busy 85 %)"], rows


def _slow_launches_job(tmp_path):
    """One rank, two steps of 680 us (us; S the step's start): twenty aten::linear ops [S+32k, S+32k+32),
    each calling cudaLaunchKernel [S+32k+1, S+32k+31) (30 us) whose 30 us kernel runs from 2 us after the
    call returns, [S+32k+33, S+32k+63): it ends just as the next call returns. cudaStreamSynchronize
    [S+640, S+672) (the last kernel ends at S+671); the step ends at S+680."""
    return _launch_loop(tmp_path, 2, 680, ("aten::linear", 32), GEMM, 33, 30, (640, 32))


def test_slow_launches_that_end_as_a_kernel_ends_are_the_hosts_time(tmp_path):
    """_slow_launches_job: each launch call returns as the kernel before ends, but at most one op is ever
    queued (its own starts 2 us after it returns): the 30 us are the host's own cost, not a wait for room in
    a full queue. The thread is blocked only in its synchronize (32 us a step), and the host paces the
    step: host-bound (all 20 launches a step read as blocked, 600 us a step, and the rank GPU-bound: an
    attacker's case)."""
    from tracekit.commands.advise import advise

    run = _slow_launches_job(tmp_path)
    steps = {r["step"]: r for r in tracekit.report(run, "bound").to_pylist()}
    assert steps[2]["host_blocked_ms"] == pytest.approx(0.032, abs=1e-9), steps[2]
    assert advise(run).to_pylist()[0]["finding"].startswith("host-bound on the rank"), advise(run).to_pylist()[0]


def test_a_late_ranks_kernel_the_others_do_not_run_is_said_so(tmp_path):
    """_side_streams_job with rank 2's 600 us gemm under another name than the others' 300 us one: at the
    others' pace it takes 300 us (its excess over theirs, the whole of which the step loses), the step 420
    us, 300 saved; advise says the others run none of that kernel (it said "spends 0.600 ms a step more on
    kernel ...", the whole kernel, as if the others ran it too: an attacker's case)."""
    from tracekit.commands.advise import advise

    run = _side_streams_job(tmp_path, late_gemm="sm80_xmma_gemm_f32f32_tn_n")
    (late,) = [f for f in advise(run).to_pylist() if f["finding"].startswith("late rank")]
    assert late["saving_ms"] == pytest.approx(0.300, abs=1e-6)
    assert "0.600 ms a step more on kernel sm80_xmma_gemm_f32f32_tn_n than the others before its launches " \
        "(the others run none of it" in late["change"], late


def _serial_tail_job(tmp_path):
    """One rank, two steps of 840 us (us; S the step's start): forty aten::mm ops back to back, the k-th
    [S+16k, S+16k+16), each calling cudaLaunchKernel [S+16k+1, S+16k+1.5) whose 18 us GEMM is queued on
    stream 7: the k-th runs [S+3+18k, S+21+18k) (the GPU busy from S+3 to S+723); cudaStreamSynchronize
    [S+640, S+724); then a serial CPU op, aten::_foreach_add_ [S+724, S+834) (an optimizer on the host);
    the step ends at S+840."""
    evs = []
    for i in range(2):
        s = 840 * i
        evs.append(step(i + 1, s, 840))
        for k in range(40):
            evs.append(cpu_op("aten::mm", s + 16 * k, 16))
            evs += kernel(GEMM, s + 3 + 18 * k, 18, launch=(s + 16 * k + 1, 1))
        evs.append(cpu_op("cudaStreamSynchronize", s + 640, 84, cat="cuda_runtime"))
        evs.append(cpu_op("aten::_foreach_add_", s + 724, 110))
    return _ingest(tmp_path, {0: evs})


def test_a_gpu_bound_rank_with_a_serial_host_tail_stays_gpu_bound(tmp_path):
    """_serial_tail_job: the GPU busy 720 of 840 us (86 %), ahead of the host by 83 us at the synchronize,
    then 110 us of the host's own after it. Each side twice as fast: GEMMs of 9 us start as their launches
    return (S+16k+1.5; the first at S+3), the last [S+625.5, S+634.5), before the synchronize is called at
    S+640; it returns 1 us after it may (as measured: S+724 against the last GEMM's S+723), at S+641, the
    tail runs to S+751 and the step ends 6 us later, S+757: 83 us sooner. A host twice as fast: the first
    call at S+0.5 (0.5 us before it), each call 0.25 us and 7.75 us between calls; the first GEMM 1.5 us
    after its call's end (as measured), S+2.25, and the GEMMs back to back behind it on their stream to
    S+722.25; the synchronize returns at S+723.25, the tail (55 us) ends at S+778.25 and the step 3 us
    later, S+781.25: 58.75 us sooner. GPUs twice as fast save more: GPU-bound, though the host-free replay
    (its tail and gaps gone: the GEMMs back to back from S+1.5 to S+721.5, the step ending at the
    synchronize's return, S+722.5: 117.5 us sooner) saves more than kernels of no duration (83 us): it
    read "host-bound" (an attacker's case). A faster host still helps, by its serial tail: said so."""
    from tracekit.commands.advise import advise

    run = _serial_tail_job(tmp_path)
    (b,) = tracekit.report(run, "bound", by="rank").to_pylist()
    assert b["bound"] == "GPU" and b["gpu_busy_ms"] == pytest.approx(1.440, abs=1e-6), b
    lead = advise(run).to_pylist()[0]
    assert lead["finding"] == "GPU-bound on the rank (GPUs busy 86 %)" and lead["saving_ms"] is None, lead
    assert "replayed with their host work and launches twice as fast the job's step ends 0.059 ms sooner, with " \
        "their kernels and copies twice as fast 0.083 ms sooner" in lead["evidence"], lead
    assert "a faster host would shorten it less" in lead["change"], lead
    from tracekit.graph import counterfactual as cf

    sp = cf.split(run)
    dur, gap = cf.host_faster(sp, [0], 0.5)
    assert 0.840 - cf.job_step_ms(sp.replay(durations=dur, gaps=gap)) == pytest.approx(0.05875, abs=1e-9)
    dur, gap = cf.host_free(sp, [0])
    assert 0.840 - cf.job_step_ms(sp.replay(durations=dur, gaps=gap)) == pytest.approx(0.1175, abs=1e-9)


def _paced_by_a_late_gpu_job(tmp_path):
    """Three ranks, three steps of 500 us (us; S = 500i the step's start), no synchronize: each thread runs
    aten::mm [S, S+480), launching (at S+1) a GEMM on stream 7, then c10d::allreduce_ [S+480, S+500),
    launching (at S+481) the all-reduce on the same stream, behind the GEMM. Ranks 0 and 1's GEMMs take 100
    us, rank 2's 700: stream 7 on ranks 0, 1: GEMMs [2, 102), [722, 822), [1442, 1542), all-reduces [483,
    722), [983, 1442), [1542, 2162); on rank 2: GEMMs [2, 702), [722, 1422), [1442, 2142), all-reduces
    [702, 722), [1422, 1442), [2142, 2162) (each 20 us after rank 2 arrives). The threads run ahead; rank
    2's GPU sets the pace, 720 us a step."""
    args = {**ARGS}
    gemm = {0: [(2, 102), (722, 822), (1442, 1542)], 2: [(2, 702), (722, 1422), (1442, 2142)]}
    nccl = {0: [(483, 722), (983, 1442), (1542, 2162)], 2: [(702, 722), (1422, 1442), (2142, 2162)]}
    gemm[1], nccl[1] = gemm[0], nccl[0]
    per = {}
    for r in range(3):
        evs = []
        for i in range(3):
            s = 500 * i
            evs += [step(i + 1, s, 500), cpu_op("aten::mm", s, 480)]
            evs += kernel(GEMM, gemm[r][i][0], gemm[r][i][1] - gemm[r][i][0], stream=7, launch=(s + 1, 1))
            evs.append(cpu_op("c10d::allreduce_", s + 480, 20))
            evs += kernel(NCCL, nccl[r][i][0], nccl[r][i][1] - nccl[r][i][0], stream=7, launch=(s + 481, 1), **args)
        per[r] = evs
    return _ingest(tmp_path, per)


def test_host_bound_ranks_paced_by_a_late_gpu_do_not_lead(tmp_path):
    """_paced_by_a_late_gpu_job: ranks 0 and 1 read host-bound (their threads in aten::mm all step, their
    GPUs idle 381 us before each all-reduce's launch), but their host work free saves nothing: rank 2's GPU
    paces them. Rank 2 at their pace cannot step faster than the threads' 500 us: from the measured 722, 720,
    720 us steps (mean 720.67) it saves at most 220.67 us. The late rank leads; the host-bound finding,
    unsized, comes after the sized findings (it led, an attacker's case)."""
    from tracekit.commands.advise import advise

    run = _paced_by_a_late_gpu_job(tmp_path)
    rows = advise(run).to_pylist()
    assert rows[0]["finding"] == "late rank 2 (GPU compute-bound)", rows
    assert 0.2 < rows[0]["saving_ms"] <= (722 + 720 + 720) / 3e3 - 0.5 + 1e-9, rows[0]
    (host,) = [f for f in rows if f["finding"].startswith("host-bound")]
    assert host["saving_ms"] is None and "rank 2 (bound: GPU) sets its pace" in host["evidence"], host
    assert all(f["saving_ms"] for f in rows[:rows.index(host)]), rows


def test_the_hosts_time_after_its_last_record_is_not_host_idle(tmp_path):
    """_paced_by_a_late_gpu_job, step 3 of ranks 0 and 1: its window runs from its start, 1000, to its GPU's
    last op's end, 2162 (1.162 ms), but the thread's last record, step 3's aten::allreduce_, ends at 1500:
    inside its ProfilerStep it ran ops all the time (0.5 ms busy, no idle); the 662 us after it the trace
    says nothing of the thread (it read 0.662 ms of host idle, 41 % idle over the rank: an attacker's case)."""
    run = _paced_by_a_late_gpu_job(tmp_path)
    rows = {(b["rank"], b["step"]): b for b in tracekit.report(run, "bound").to_pylist()}
    for r in (0, 1):
        b = rows[(r, 3)]
        assert b["timeline_ms"] == pytest.approx(1.162, abs=1e-9), b
        assert b["host_busy_ms"] == pytest.approx(0.5, abs=1e-9), b
        assert b["host_idle_ms"] == pytest.approx(0.0, abs=1e-9), b


def _postproc_job(tmp_path):
    """Three ranks, three steps (us): each step, aten::mm [S, S+100) launches (at S+1) a 100 us GEMM on stream
    7, [S+2, S+102); c10d::allreduce_ [S+100, S+110) launches (at S+101) the all-reduce behind it, which
    ends 20 us after the last rank arrives; cudaStreamSynchronize from S+110 to 1 us after the all-reduce;
    the step ends 2 us later, except on rank 2, which runs aten::postproc for 300 us after its synchronize
    first. Ranks 0, 1: steps [0, 125), [125, 550), [550, 975); rank 2: [0, 425), [425, 850), [850, 1275).
    All-reduces: [102, 122) on every rank (all arrive at 102); ranks 0, 1 from 227 and 652, rank 2 from 527
    and 952, ending at 547 and 972."""
    ends = {1: 122, 2: 547, 3: 972}
    starts = {0: {1: 0, 2: 125, 3: 550}, 2: {1: 0, 2: 425, 3: 850}}
    starts[1] = starts[0]
    per = {}
    for r in range(3):
        evs = []
        for i in (1, 2, 3):
            s, end = starts[r][i], ends[i]
            length = end + 1 + (300 if r == 2 else 0) + 2 - s
            evs += [step(i, s, length), cpu_op("aten::mm", s, 100)]
            evs += kernel(GEMM, s + 2, 100, stream=7, launch=(s + 1, 1))
            evs.append(cpu_op("c10d::allreduce_", s + 100, 10))
            evs += kernel(NCCL, s + 102, end - (s + 102), stream=7, launch=(s + 101, 1), **ARGS)
            evs.append(cpu_op("cudaStreamSynchronize", s + 110, end + 1 - (s + 110), cat="cuda_runtime"))
            if r == 2:
                evs.append(cpu_op("aten::postproc", end + 1, 300))
        per[r] = evs
    return _ingest(tmp_path, per)


def test_a_late_ranks_op_is_said_per_step_it_ran(tmp_path):
    """_postproc_job: rank 2 runs aten::postproc, 300 us, every step, after its synchronize: it arrives at
    steps 2 and 3's all-reduces 300 us after the others. The lead-ups before those two hold two of its three
    postprocs (step 3's comes after the last collective): 600 us over 2 steps, 0.300 ms a step (it said
    0.200: the 600 us over all 3 steps, an attacker's case)."""
    from tracekit.commands.advise import advise

    run = _postproc_job(tmp_path)
    (late,) = [f for f in advise(run).to_pylist() if f["finding"].startswith("late rank")]
    assert "rank 2 spends 0.300 ms a step more on cpu op aten::postproc" in late["change"] + late["evidence"], late


def _run_ahead_job(tmp_path):
    """Two ranks, three steps whose ProfilerSteps last 100 us each ([0, 100), [100, 200), [200, 300)): no
    synchronize, so the threads run ahead of their GPUs. Each step aten::mm [S, S+10) launches (at S+5) a
    gemm on stream 7, 200 us (rank 1: 400), and c10d::allreduce_ [S+20, S+25) launches (at S+21) the
    all-reduce behind it on stream 7, which ends 50 us after the last rank's arrival. GPUs (us): rank 1's
    gemms [10, 410), [460, 860), [910, 1310), its all-reduces [410, 460), [860, 910), [1310, 1360); rank 0's
    gemms [10, 210), [460, 660), [910, 1110), its all-reduces from their ends to rank 1's ends."""
    per = {}
    for r in range(2):
        g = 400 if r == 1 else 200
        evs = per[r] = []
        start = 10
        for i in range(3):
            s = 100 * i
            arrive = start + 400  # rank 1's, the last
            evs += [step(i + 1, s, 100), cpu_op("aten::mm", s, 10)]
            evs += kernel(GEMM, start, g, stream=7, launch=(s + 5, 1))
            evs.append(cpu_op("c10d::allreduce_", s + 20, 5))
            evs += kernel(NCCL, start + g, arrive + 50 - (start + g), stream=7, launch=(s + 21, 1),
                          **{**ARGS, "Group size": 2, "Process Group Ranks": "[0, 1]"})
            start = arrive + 50
    return _ingest(tmp_path, per)


def test_percents_are_of_the_step_the_savings_are_of_where_threads_run_ahead(tmp_path):
    """_run_ahead_job: the step as the GPUs run it is 460, 450 and 450 us (from the first ProfilerStep's start,
    then from one step's last work to the next one's): a mean of 453.33 us. With rank 1's gemm at rank 0's
    200 us the all-reduces end at 260, 510 and 760 (each gemm queued behind the previous all-reduce): 253.33
    us, 200 saved a step: 44.1 % of the step. Taken of the 100 us ProfilerSteps it read 200 %."""
    from tracekit.commands.advise import advise
    from tracekit.table_meta import note_of

    table = advise(_run_ahead_job(tmp_path))
    late = [f for f in table.to_pylist() if f["finding"].startswith("late rank")]
    assert [f["finding"] for f in late] == ["late rank 1 (GPU compute-bound)"], late
    assert late[0]["saving_ms"] == pytest.approx(0.200, abs=1e-6)
    assert late[0]["saving_pct"] == pytest.approx(100 * 200 / (1360 / 3), abs=1e-3)
    assert "percents are of the replayed step as is, 0.453 ms" in note_of(table), note_of(table)


def _idle_start_job(tmp_path):
    """Three ranks, three steps of 770 us (us; S the step's start). Rank 1's thread runs no op for the first
    300 us of each step (a data loader it waits for, unrecorded), then aten::mm [S+300, S+700) launches (at
    S+305) a gemm [S+310, S+690); ranks 0 and 2 run aten::mm [S, S+400), launching (at S+5) a gemm [S+10,
    S+390). c10d::allreduce_ [A, A+10) launches (at A+5, stream 7) the all-reduce, A = S+700 on rank 1 and
    S+400 elsewhere; it ends at S+760, 50 us after rank 1's arrival at S+710; cudaStreamSynchronize from
    A+10 to S+765; the step ends at S+770."""
    per = {}
    for r in range(3):
        idle = 300 if r == 1 else 0
        evs = per[r] = []
        for i in range(3):
            s = 770 * i
            a = s + idle + 400
            evs += [step(i + 1, s, 770), cpu_op("aten::mm", s + idle, 400)]
            evs += kernel(GEMM, s + idle + 10, 380, stream=7, launch=(s + idle + 5, 1))
            evs.append(cpu_op("c10d::allreduce_", a, 10))
            evs += kernel(NCCL, a + 10, s + 760 - (a + 10), stream=7, launch=(a + 5, 1), **ARGS)
            evs.append(cpu_op("cudaStreamSynchronize", a + 10, s + 765 - (a + 10), cat="cuda_runtime"))
    return _ingest(tmp_path, per)


def test_a_gpu_starved_while_its_thread_idles_is_host_idle(tmp_path):
    """_idle_start_job, rank 1 each step: its thread in ops [S+300, S+765) (mm, the all-reduce's call, the
    synchronize, 55 us of it blocked): busy 410 us, idle 305 (the first 300, the last 5). Its GPU runs 430 us
    (gemm 380, all-reduce 50), never waits (it arrives last) and starves 340 us with nothing queued: [S,
    S+310) (300 us with its thread in no op, 10 in mm), [S+690, S+710) (in mm, then the all-reduce's call),
    [S+760, S+770) (5 in the synchronize, 5 in no op): 305 us idle against 35 busy. bound: host idle (it read
    host: busy 410 >= idle 305 over the whole step), as advise's late rank says; ranks 0 and 2 wait 300 us at
    the all-reduce and starve 30: waiting."""
    from tracekit.commands.advise import advise

    run = _idle_start_job(tmp_path)
    rows = tracekit.report(run, "bound").to_pylist()
    assert {(r["rank"], r["step"]): r["bound"] for r in rows} == {
        (r, s): "host idle" if r == 1 else "waiting" for r in range(3) for s in (1, 2, 3)}, rows
    one = [r for r in rows if r["rank"] == 1]
    assert [(r["host_busy_ms"], r["host_idle_ms"], r["gpu_busy_ms"]) for r in one] == \
        [pytest.approx((0.410, 0.305, 0.430), abs=1e-9)] * 3, one
    late = [f for f in advise(run).to_pylist() if f["finding"].startswith("late rank")]
    assert [f["finding"] for f in late] == ["late rank 1 (host idle)"], late
    assert late[0]["saving_ms"] == pytest.approx(0.300, abs=1e-6)


def _stall_run_ahead_job(tmp_path):
    """Three ranks, five steps, the first two before the profile (no ProfilerStep), no synchronize: the
    threads never block (us). Each step, rank 1's thread first runs no op for 300 us; then every rank runs
    aten::mm for 100 us from t, launching (at t+5) a 50 us gemm on stream 7, and c10d::allreduce_ [t+100,
    t+110), launching (at t+105) the all-reduce behind it on stream 7, which ends 50 us after rank 1's arrival.
    Step k starts at 410(k-1) on rank 1 and at 110(k-1) elsewhere. Rank 1: gemm [410k-104, 410k-54), its
    all-reduce [410k-4, 410k+46); ranks 0 and 2: the first gemm [6, 56), the first all-reduce [106, 456), then
    each gemm queued behind the all-reduce before it: [410k-364, 410k-314), all-reduce [410k-314, 410k+46)."""
    args = {**ARGS, "Process Group Ranks": "[0, 1, 2]"}
    per = {}
    for r in range(3):
        evs = per[r] = []
        for k in range(1, 6):
            t = 410 * (k - 1) + 300 if r == 1 else 110 * (k - 1)
            if k >= 3:
                evs.append(step(k, 410 * (k - 1) if r == 1 else 110 * (k - 1), 410 if r == 1 else 110))
            evs.append(cpu_op("aten::mm", t, 100))
            gemm = t + 6 if r == 1 or k == 1 else 410 * (k - 1) + 46
            evs += kernel(GEMM, gemm, 50, stream=7, launch=(t + 5, 1))
            evs.append(cpu_op("c10d::allreduce_", t + 100, 10))
            start = t + 106 if r == 1 or k == 1 else gemm + 50
            evs += kernel(NCCL, start, 410 * k + 46 - start, stream=7, launch=(t + 105, 1), **args)
    return _ingest(tmp_path, per)


def test_a_late_first_step_left_by_a_stall_in_every_step_is_not_the_cause(tmp_path):
    """_stall_run_ahead_job: rank 1's profiled steps start at 820, 1230, 1640, the others' at 220, 330, 440:
    its first profiled step starts 600 us after the median rank's (the two steps before the profile, 300 us
    each), once, not per step; its cause is its 300 us of host idle each step. Without it in the profiled
    steps (the steps before unchanged: it still starts step 3 at 820) each step is rank 1's 110 us thread:
    all-reduces end at 976, 1086, 1196 against 1276, 1686, 2096: 456 + 410 + 410 -> 156 + 110 + 110 us, 300 us
    a step saved. It said 'starts late +0.600 ms' per step and, first, that the delay comes before the step
    (data loading before it, profile more steps: an attacker's job)."""
    from tracekit.commands.advise import advise

    run = _stall_run_ahead_job(tmp_path)
    late = [f for f in advise(run).to_pylist() if f["finding"].startswith("late rank")]
    assert [f["finding"] for f in late] == ["late rank 1 (host idle)"], late
    assert late[0]["saving_ms"] == pytest.approx(0.300, abs=1e-6)
    assert ("rank 1: host idle +0.300 ms, its first profiled step starts 0.600 ms after the median rank's (once, "
            "not per step") in late[0]["evidence"], late[0]["evidence"]
    assert late[0]["change"].startswith("find what rank 1 waits for on the CPU"), late[0]["change"]
    assert "before the step" not in late[0]["change"], late[0]["change"]


def _serial_cpu_job(tmp_path):
    """Two ranks, three steps of 560 us (us; S the step's start), every rank alike: aten::mm [S, S+20)
    launches (at S+5) a 100 us gemm [S+6, S+106) on stream 7; c10d::allreduce_ [S+20, S+30) launches (at
    S+25) the all-reduce behind it, [S+106, S+156); aten::item [S+30, S+160) waits in cudaStreamSynchronize
    [S+32, S+158) for it; then aten::copy_ [S+160, S+560), CPU work that launches nothing (a .item() sync,
    then Python over its value)."""
    args = {**ARGS, "Group size": 2, "Process Group Ranks": "[0, 1]"}
    per = {}
    for r in range(2):
        evs = per[r] = []
        for i in range(3):
            s = 560 * i
            evs += [step(i + 1, s, 560), cpu_op("aten::mm", s, 20)]
            evs += kernel(GEMM, s + 6, 100, stream=7, launch=(s + 5, 1))
            evs.append(cpu_op("c10d::allreduce_", s + 20, 10))
            evs += kernel(NCCL, s + 106, 50, stream=7, launch=(s + 25, 1), **args)
            evs += [cpu_op("aten::item", s + 30, 130), cpu_op("cudaStreamSynchronize", s + 32, 126, cat="cuda_runtime"),
                    cpu_op("aten::copy_", s + 160, 400)]
    return _ingest(tmp_path, per)


def test_a_host_bound_by_its_own_cpu_work_is_not_told_fewer_launches(tmp_path):
    """_serial_cpu_job, each rank's step: its thread in ops [S, S+560), blocked 126 us in the synchronize:
    busy 434 us; in no op that launches GPU work (mm and allreduce_ hold a launch each; item and copy_ none)
    and not blocked: [S+30, S+32), [S+158, S+560): 404 us, 93 % of it. Its GPU runs 150 us and starves from
    S+156 to the next gemm, launched at S+565 while it starved: host-bound, by its CPU work, which fewer
    launches (CUDA graphs) would not remove; the launch-paced job (20 launches of 23 us a step) keeps that
    change."""
    from tracekit.commands.advise import advise

    run = _serial_cpu_job(tmp_path)
    rows = tracekit.report(run, "bound").to_pylist()
    assert {r["bound"] for r in rows} == {"host"}, rows
    assert [(r["host_busy_ms"], r["host_cpu_only_ms"]) for r in rows] == [pytest.approx((0.434, 0.404))] * 6, rows
    lead = advise(run).to_pylist()[0]
    assert lead["finding"].startswith("host-bound on every rank"), lead
    assert "93 % of their busy time in ops that launch no GPU work" in lead["evidence"], lead["evidence"]
    assert lead["change"].startswith("the host's own CPU work (ops that launch no GPU work) paces the GPU"), lead
    assert "fewer launches" not in lead["evidence"], lead["evidence"]
    (tmp_path / "paced").mkdir()
    paced = advise(_launch_paced_job(tmp_path / "paced")).to_pylist()[0]
    assert paced["change"].startswith("the host issues the work slower than the GPU runs it: fewer launches"), paced
