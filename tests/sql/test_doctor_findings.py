"""doctor's findings about what a run is: traces of several jobs, a multi-rank job with no communication
tracekit recognises, c10d ops and kernels that do not pair up, barriers (no payload) that are not
'unsized'. Expected findings worked out from the hand-made traces."""

import tracekit
from tests.conftest import dist, write_trace
from tests.tracegen import cpu_op, kernel, step

DAY_NS = 86_400 * 10**9


def findings(run):
    return {r["check"]: r for r in tracekit.report(run, "doctor").to_pylist()}


def ingest(tmp_path, traces):
    for r, (evs, header) in traces.items():
        write_trace(tmp_path / f"rank{r}.json", evs, header=header)
    return tracekit.ingest([tmp_path], tmp_path / "run", jobs=1)


def ar(ts):
    return kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", ts, 10, launch=(ts - 1, 1),
                  **{"Collective name": "allreduce", "In msg nelems": 64, "Out msg nelems": 64, "dtype": "Float"})


def test_traces_of_two_jobs(tmp_path):
    a = {**dist(0, world=8), "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}],
         "baseTimeNanoseconds": 1_700_000_000 * 10**9}
    b = {**dist(1, world=2), "deviceProperties": [{"id": 0, "name": "Tesla V100-SXM2-32GB"}],
         "baseTimeNanoseconds": 1_700_000_000 * 10**9 + 9 * DAY_NS}
    run = ingest(tmp_path, {0: ([step(1, 0, 100)] + ar(10), a), 1: ([step(1, 0, 100)] + ar(12), b)})
    f = findings(run)["mixed jobs"]
    assert f["severity"] == "warning"
    assert f["finding"] == ("the traces look like more than one job: world sizes 2, 8; GPUs NVIDIA A100-SXM4-80GB, "
                            "Tesla V100-SXM2-32GB; recorded 216.0 hours apart")


def test_a_multi_rank_job_without_known_communication(tmp_path):
    # two ranks run a GEMM and an expert-parallel exchange kernel tracekit does not know (3 ms, twice)
    def evs():
        out = [step(1, 0, 20_000)] + kernel("sm90_xmma_gemm_bf16bf16", 10, 5_000, launch=(5, 1))
        out += kernel("void myep::dispatch_tokens<8>(int4*, int*)", 6_000, 1_500, stream=30, launch=(6, 1))
        out += kernel("void myep::dispatch_tokens<8>(int4*, int*)", 9_000, 1_500, stream=30, launch=(7, 1))
        return out
    run = ingest(tmp_path, {0: (evs(), dist(0)), 1: (evs(), dist(1))})
    f = findings(run)["no communication found"]
    assert (f["severity"], f["ranks"]) == ("warning", "0,1")
    assert f["finding"] == ("a job of 2 ranks, but no GPU kernel of these ranks is a communication kernel tracekit "
                            "knows: kernels that look like communication by name: void myep::dispatch_tokens<8>"
                            "(int4*, int*) (6.0 ms in 4 kernels)")
    assert "TRACEKIT_COMM_KERNELS" in f["fix"]


def test_ops_without_kernels_and_barriers_are_not_unsized(tmp_path):
    # two c10d::allreduce_ ops, only the first launches a kernel; a c10d::barrier (no tensor recorded)
    # launches an allreduce kernel of no size: a barrier, not an unsized collective
    def op(ts):
        return cpu_op("c10d::allreduce_", ts, 20, **{"Input Dims": [[[64]], [], [], []],
                                                     "Input type": ["TensorList", "", "", "Scalar"]})

    evs = [step(1, 0, 1000), op(10)] + kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 40, 5, launch=(12, 1))
    evs += [op(100), cpu_op("c10d::barrier", 200, 20)]
    evs += kernel("ncclDevKernel_AllReduce_Sum_u8_RING_LL", 230, 5, launch=(202, 1))
    run = ingest(tmp_path, {0: (evs, dist(0, world=1))})
    f = findings(run)
    assert f["ops without kernels"]["finding"] == ("c10d ops and comm kernels per rank and collective differ: "
                                                   "rank 0: 2 c10d allreduce ops, 1 kernel")
    assert run.sql("SELECT collective, bytes FROM collectives ORDER BY ts_ns").to_pylist() == [
        {"collective": "allreduce", "bytes": 256}, {"collective": "barrier", "bytes": None}]
    assert "no message sizes" not in f


def test_one_of_a_thing_is_said_in_the_singular(tmp_path):
    """A comm kernel with no args and no c10d op above it: known by its name only. One of them, one
    sentence in the singular (it read '1 comm kernels are known by their name only')."""
    evs = [step(1, 0, 1000)] + kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 40, 5, launch=(12, 1))
    f = findings(ingest(tmp_path, {0: (evs, dist(0, world=1))}))
    assert f["NCCL kernels without metadata"]["finding"] == ("1 comm kernel is known by its name only (no args, "
                                                             "no launching op)")


def test_the_words_of_a_count_in_python_and_in_sql():
    """tracekit.words and its SQL twin (tk_plural, tk_word in sql/words.sql) say a count alike."""
    import duckdb

    from tracekit import sql_files
    from tracekit.words import plural, word

    con = duckdb.connect()
    con.execute(sql_files.load("", "words").text)
    cases = [(1, "rank", "ranks", "1 rank"), (0, "rank", "ranks", "0 ranks"), (2, "rank has", "ranks have",
             "2 ranks have"), (1024, "kernel", "kernels", "1,024 kernels")]
    for n, one, many, want in cases:
        assert plural(n, one, many) == want
        assert con.execute("SELECT tk_plural(?, ?, ?)", [n, one, many]).fetchone()[0] == want
    assert word(1, "its", "their") == "its" == con.execute("SELECT tk_word(1, 'its', 'their')").fetchone()[0]


def test_a_trace_cut_short_and_cuda_graphs(tmp_path):
    # rank 0: ProfilerStep#1 spans 0-1000 us; one kernel launched inside it, one launched at 1000 (the
    # step's end) and one at 1500: two launched at or after the last step ended. Rank 1 calls
    # cudaGraphLaunch three times beside a kernel, rank 2 twice and runs no kernel at all.
    def graph_launch(ts):
        return cpu_op("cudaGraphLaunch", ts, 5, cat="cuda_runtime")

    r0 = [step(1, 0, 1000)] + kernel("sm90_xmma_gemm_bf16bf16", 100, 50, launch=(90, 1))
    r0 += kernel("sm90_xmma_gemm_bf16bf16", 1010, 50, launch=(1000, 1))
    r0 += kernel("sm90_xmma_gemm_bf16bf16", 1510, 50, launch=(1500, 1))
    r1 = [step(1, 0, 1000), graph_launch(10), graph_launch(300), graph_launch(600)]
    r1 += kernel("sm90_xmma_gemm_bf16bf16", 100, 50, launch=(90, 1))
    r2 = [step(1, 0, 1000), graph_launch(20), graph_launch(400)]
    run = ingest(tmp_path, {r: (evs, dist(r, world=3)) for r, evs in enumerate([r0, r1, r2])})
    f = findings(run)
    assert (f["trace cut short"]["severity"], f["trace cut short"]["ranks"]) == ("info", "0")
    assert f["trace cut short"]["finding"] == "2 GPU kernels were launched after the last ProfilerStep ended"
    assert (f["CUDA graphs"]["severity"], f["CUDA graphs"]["ranks"]) == ("info", "1,2")
    assert f["CUDA graphs"]["finding"] == "5 cudaGraphLaunch calls: their kernels share one launch"


def test_a_trace_with_no_event_is_said(tmp_path):
    """Rank 1's file holds `"traceEvents": []` (a profiler stopped before its active steps): it ingested with
    0 events and no word. doctor names that rank, alone (rank 0 has its step and kernel), and not also under
    'no ProfilerStep' (a trace with nothing in it lacks that first)."""
    run = ingest(tmp_path, {0: ([step(1, 0, 100)] + kernel("gemm", 10, 20), dist(0, world=2)),
                            1: ([], dist(1, world=2))})
    f = findings(run)
    assert (f["no events"]["severity"], f["no events"]["ranks"]) == ("warning", "1")
    assert f["no events"]["finding"] == ("1 rank's trace holds no event (traceEvents empty): nothing of it can be "
                                         "measured")
    assert "no ProfilerStep" not in f
