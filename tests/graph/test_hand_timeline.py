"""The dependency graph, its replay and its critical path on a hand-worked 3-rank timeline: every expected
figure below is worked out by hand from the events' times (us), not from the code."""

import numpy as np
import pytest

import tracekit
import tracekit.graph as G
from tests.conftest import dist, write_trace
from tests.tracegen import cpu_op, kernel, step

GROUP = {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float",
         "Group size": 3, "Process Group Name": "0", "Process Group Description": "default_pg",
         "Process Group Ranks": "[0, 1, 2]"}
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
GEMM = "volta_sgemm_128x64_nn"


def hand_run(tmp_path):
    # rank 0: step [0, 100); gemm launched at 10, runs [12, 40); allreduce launched at 20, runs [41, 70)
    r0 = [step(1, 0, 100)] + kernel(GEMM, 12, 28, launch=(10, 1)) + kernel(NCCL, 41, 29, stream=20,
                                                                             launch=(20, 1), **GROUP)
    # rank 1: step [5, 100); allreduce launched at 30, runs [31, 70); a cudaStreamWaitEvent at 59, then the
    # tail gemm launched at 60 on stream 7 runs [70, 110): it waits for the allreduce (inferred wait edge)
    r1 = [step(1, 5, 95)] + kernel(NCCL, 31, 39, stream=20, launch=(30, 1), **GROUP)
    r1 += [cpu_op("cudaStreamWaitEvent", 59, 0.5, cat="cuda_runtime")] + kernel(GEMM, 70, 40, launch=(60, 1))
    # rank 2: step [8, 100); gemm launched at 9 runs [10, 50); allreduce launched at 40 runs [55, 70): last
    r2 = [step(1, 8, 92)] + kernel(GEMM, 10, 40, launch=(9, 1)) + kernel(NCCL, 55, 15, stream=20,
                                                                          launch=(40, 1), **GROUP)
    for r, evs in enumerate((r0, r1, r2)):
        write_trace(tmp_path / f"rank{r}.json", evs, header=dist(r, world=3))
    return tracekit.ingest([tmp_path], tmp_path / "run", jobs=1)


def test_replay_gives_back_each_ranks_step(tmp_path):
    run = hand_run(tmp_path)
    got = {r["rank"]: r for r in tracekit.report(run, "replay").to_pylist()}
    # rank 0: [0, 100) (CPU step end last); rank 1: [5, 110) (the tail gemm); rank 2: [8, 100)
    assert {k: (v["measured_ms"], v["replayed_ms"], v["error_pct"]) for k, v in got.items()} == {
        0: (pytest.approx(0.100), pytest.approx(0.100), 0), 1: (pytest.approx(0.105), pytest.approx(0.105), 0),
        2: (pytest.approx(0.092), pytest.approx(0.092), 0)}


def test_the_edges_the_trace_implies(tmp_path):
    run = hand_run(tmp_path)
    rows = run.sql("SELECT kind, count(*) AS n FROM graph_edges GROUP BY kind").to_pylist()
    kinds = {r["kind"]: r["n"] for r in rows}
    # launches: 6 calls -> 6 ops; collective: 3 arrivals -> hub -> 3 transfers; one inferred wait (rank 1);
    # streams: each rank's allreduce arrival -> its transfer (3), and nothing else shares a stream;
    # threads: per rank step start -> two launch calls -> step end (3 each)
    assert kinds == {"launch": 6, "collective": 6, "wait": 1, "stream": 3, "thread": 9}
    hub = run.sql("SELECT ts_ns FROM graph_nodes WHERE kind = 'hub'").column(0).to_pylist()
    assert len(hub) == 1 and hub[0] % 10**9 == 55_000  # the last arrival: rank 2 at 55 us


def test_a_counterfactual_moves_what_depends_on_it(tmp_path):
    run = hand_run(tmp_path)
    g = G.build(run)
    r = g.replay()
    # rank 2's allreduce waited 14.5 us after its launch call (40.5 -> 55): remove that launch latency
    arrive2 = np.flatnonzero((g.kind == "arrive") & (g.rank == 2))[0]
    e = np.flatnonzero((g.dst == arrive2) & (g.edge_kind == "launch"))[0]
    gaps = g.gap_ns + g.slack_ns
    gaps[e] = -500  # from the call's end: the op starts with its call (40.5 us)
    cf = r.counterfactual(gaps=gaps)
    steps = {row["rank"]: row["replayed_ms"] for row in cf.steps().to_pylist()}
    # the last arrival is now rank 0 at 41: transfers [41, 56); rank 1's tail gemm waits for them and for its
    # launch call, which it started after in the trace (the call [60, 60.5) returned before the gemm began:
    # graph_edges' launch rule), so it runs [60.5, 100.5): rank 1's step [5, 100.5), 95.5 us; ranks 0 and 2
    # end with their CPU steps as before
    assert steps == {0: pytest.approx(0.100), 1: pytest.approx(0.0955), 2: pytest.approx(0.092)}


def test_critical_path_rows_by_hand(tmp_path):
    run = hand_run(tmp_path)
    rows = [(r["rank"], r["cause"], r["name"], r["ns"]) for r in tracekit.report(run, "critical_path").to_pylist()]
    # the step's span: rank 0's start (0) to rank 1's tail gemm end (110). Walked back: the gemm [70, 110)
    # waited for rank 1's transfer [55, 70), which waited for the last arrival, rank 2's at 55; rank 2's
    # allreduce started 14.5 us after its launch call ended (40.5); before it, rank 2's CPU from its step
    # start (8): the gemm's launch [9, 9.5), CPU [9.5, 40), the allreduce's launch [40, 40.5); before 8
    # rank 2 had not begun its step, which the other ranks had (from 0)
    assert rows == [
        (2, "idle", "the rank's later first step", 8_000),
        (2, "launch/CPU", "CPU between ops (+1 more)", 32_500),
        (2, "starved", "launch latency", 14_500),
        (1, "comm transfer", NCCL, 15_000),
        (1, "compute: gemm", GEMM, 40_000),
    ]
    assert sum(r[3] for r in rows) == 110_000


def test_the_pages_chart_sums_the_path_by_rank_and_cause(tmp_path):
    from tracekit.graph.page import by_cause_figure

    run = hand_run(tmp_path)
    fig = by_cause_figure(tracekit.report(run, "critical_path").to_pylist())
    got = {(x, bar["name"]): y for bar in fig["data"] for x, y in zip(bar["x"], bar["y"], strict=True) if y}
    # the rows of test_critical_path_rows_by_hand, in ms, per rank and cause
    assert got == pytest.approx({("1", "comm transfer"): 0.015, ("1", "compute: gemm"): 0.040,
                                 ("2", "idle"): 0.008, ("2", "launch/CPU"): 0.0325, ("2", "starved"): 0.0145})


def test_the_timeline_marks_the_path_as_a_track(tmp_path):
    import json

    run = hand_run(tmp_path)
    counts = tracekit.timeline(run, tmp_path / "job.json")
    events = json.loads((tmp_path / "job.json").read_text())["traceEvents"]
    got = [(e["pid"], e["name"].split(":")[0], e["ts"], e["dur"])
           for e in events if e.get("cat") == "tracekit-critical"]
    # the rows of test_critical_path_rows_by_hand, at the trace's own times (us)
    assert got == [(2, "idle", 0, 8), (2, "launch/CPU", 8, 32.5), (2, "starved", 40.5, 14.5),
                   (1, "comm transfer", 55, 15), (1, "compute", 70, 40)]
    assert counts["critical"] == 5
    names = {(e["pid"], e["args"]["name"]) for e in events if e["ph"] == "M" and e["tid"] == 900003}
    assert names == {(1, "tracekit: critical path"), (2, "tracekit: critical path")}


def _sync_trace(tmp_path, with_sync_events):
    def k(name, corr, ts, dur, stream):
        return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
                "args": {"stream": stream, "device": 0, "correlation": corr}}

    def call(name, corr, ts):
        return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 100, "tid": 1, "ts": ts, "dur": 0.5,
                "args": {"correlation": corr}}

    # A (stream 7) launched first, then the event recorded on stream 7 (corr 2), then C on stream 7 (corr 3),
    # then stream 20 waits for the event (corr 4) and B is launched on stream 20 (corr 5)
    evs = [step(1, 0, 100), call("cudaLaunchKernel", 1, 10), k("A", 1, 12, 28, 7),
           call("cudaEventRecord", 2, 11), call("cudaLaunchKernel", 3, 13), k("C", 3, 40, 0.5, 7),
           call("cudaStreamWaitEvent", 4, 15), call("cudaLaunchKernel", 5, 20), k("B", 5, 41, 9, 20)]
    if with_sync_events:
        evs.append({"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 20, "ts": 16,
                    "dur": 0, "args": {"cuda_sync_kind": "Stream Wait Event", "stream": 20, "correlation": 4,
                                       "device": 0, "wait_on_stream": 7, "wait_on_cuda_event_record_corr_id": 2}})
    tmp_path.mkdir()
    write_trace(tmp_path / "rank0.json", evs, header=dist(0, world=1))
    run = tracekit.ingest([tmp_path], tmp_path / "run", jobs=1)
    return run.sql("SELECT s.name AS src, d.name AS dst FROM graph_edges e JOIN graph_nodes s ON s.node_id = e.src "
                   "JOIN graph_nodes d ON d.node_id = e.dst WHERE e.kind = 'wait'").to_pylist()


def test_cross_stream_waits_from_cuda_sync_events_where_recorded(tmp_path):
    # recorded: B waits for the op launched before the event record on stream 7: A, not C
    assert _sync_trace(tmp_path / "a", True) == [{"src": "A", "dst": "B"}]
    # inferred without them: the last op launched on stream 7 before the wait call, C (ended by B's start)
    assert _sync_trace(tmp_path / "b", False) == [{"src": "C", "dst": "B"}]
