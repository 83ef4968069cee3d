"""The numbers users trust most, on real traces, against what each trace itself records: the shapes
and args of its communication ops, read here with plain json, and nccl-tests' formulas."""

import gzip
import json
import math

import pytest

import tracekit
from tests.conftest import shared_traces

ELEM_BYTES = {"signed char": 1, "unsigned char": 1, "float": 4, "long": 8, "int": 4, "c10::BFloat16": 2}


def events(path):
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)["traceEvents"]


def recorded_ops(path, name):
    return [e for e in events(path) if e.get("name") == name and e.get("ph") == "X"]


@pytest.fixture(scope="module")
def filter_run(tmp_path_factory):
    return tracekit.ingest([shared_traces() / "hta_trace_filter_2rank"], tmp_path_factory.mktemp("f") / "run", jobs=2)


def test_allgather_size_and_group_from_the_recorded_output_and_input(filter_run):
    # c10d::_allgather_base_(output, input) records both shapes: the group is output / input ranks
    for rank in (0, 1):
        path = shared_traces() / "hta_trace_filter_2rank" / f"sampled_rank-{rank}.json.gz"
        ops = recorded_ops(path, "c10d::_allgather_base_")
        assert ops, "the trace records its allgathers"
        expect = []
        for o in sorted(ops, key=lambda e: e["ts"]):
            out_dims, in_dims = o["args"]["Input Dims"][:2]
            out_n, in_n = math.prod(out_dims), math.prod(in_dims)
            eb = ELEM_BYTES[o["args"]["Input type"][0]]
            expect.append({"group_size": out_n // in_n, "group_size_source": "shapes", "out_nelems": out_n,
                           "in_nelems": in_n, "bytes": out_n * eb})
        got = filter_run.sql(f"SELECT group_size, group_size_source, out_nelems, in_nelems, bytes FROM collectives "
                             f"WHERE rank = {rank} AND collective = 'allgather' ORDER BY ts_ns").to_pylist()
        assert got == expect
        assert expect[0]["group_size"] == 64 and expect[0]["bytes"] == 1073741824  # the figures


def test_no_group_size_from_the_world(filter_run):
    # the trace lists no process group and its allreduces/alltoalls record no group: world 128 is not it
    d = json.loads(filter_run.sql("SELECT metadata FROM traces WHERE rank = 0").to_pylist()[0]["metadata"])
    assert "pg_config" not in d["distributedInfo"] and d["distributedInfo"]["world_size"] == 128
    got = filter_run.sql("SELECT DISTINCT collective, group_size, group_size_source, busbw_gbps IS NULL AS nobw "
                         "FROM collectives WHERE collective IN ('allreduce', 'alltoall')").to_pylist()
    assert {(r["group_size"], r["group_size_source"], r["nobw"]) for r in got} == {(None, "unknown", True)}


def test_alltoall_output_is_the_recorded_output(filter_run):
    path = shared_traces() / "hta_trace_filter_2rank" / "sampled_rank-0.json.gz"
    expect = [(math.prod(o["args"]["Input Dims"][1]), math.prod(o["args"]["Input Dims"][0]))
              for o in sorted(recorded_ops(path, "c10d::alltoall_base_"), key=lambda e: e["ts"])]
    got = [(r["in_nelems"], r["out_nelems"]) for r in filter_run.sql(
        "SELECT in_nelems, out_nelems FROM collectives WHERE rank = 0 AND collective = 'alltoall' "
        "ORDER BY ts_ns").to_pylist()]
    assert got == expect
    assert any(i != o for i, o in expect)  # uneven splits: a copy of the input would be wrong


def test_kernel_args_win_on_a_modern_trace(tmp_path):
    path = shared_traces() / "tracelens_b200_eager" / "eager_trace.json.gz"
    (k,) = [e for e in events(path) if e.get("cat") == "kernel" and "AllGather" in e.get("name", "")]
    a = k["args"]
    run = tracekit.ingest([path], tmp_path / "run", jobs=1)
    (r,) = run.sql("SELECT collective, group_size, group_size_source, in_nelems, out_nelems, bytes, busbw_gbps "
                   "FROM collectives WHERE library = 'nccl'").to_pylist()
    assert r == {"collective": "allgather", "group_size": a["Group size"], "group_size_source": "kernel args",
                 "in_nelems": a["In msg nelems"], "out_nelems": a["Out msg nelems"],
                 "bytes": a["Out msg nelems"] * 2,  # BFloat16
                 "busbw_gbps": pytest.approx(a["Out msg nelems"] * 2 / (k["dur"] * 1000)
                                             * (a["Group size"] - 1) / a["Group size"], rel=1e-3)}


def test_symmetric_memory_all_reduce_is_communication(tmp_path):
    """tracelens_b200_eager runs PyTorch symmetric memory's multicast all-reduce: kernels named
    multimem_all_reduce_kernel, each launched inside a symm_mem::multimem_all_reduce_ op whose input shape
    gives its size (BFloat16). They count as comm, with the sizes their ops record."""
    path = shared_traces() / "tracelens_b200_eager" / "eager_trace.json.gz"
    evs = events(path)
    kernels = sorted((e for e in evs if e.get("cat") == "kernel" and "multimem_all_reduce_kernel" in e["name"]),
                     key=lambda e: e["ts"])
    launch = {e["args"]["correlation"]: e for e in evs if e.get("cat") == "cuda_runtime"
              and e.get("args", {}).get("correlation") is not None}
    ops = recorded_ops(path, "symm_mem::multimem_all_reduce_")
    expect = []
    for k in kernels:
        lt = launch[k["args"]["correlation"]]
        (op,) = [o for o in ops if o["tid"] == lt["tid"] and o["ts"] <= lt["ts"] <= o["ts"] + o["dur"]]
        expect.append((round(k["dur"] * 1000), math.prod(op["args"]["Input Dims"][0]) * 2))
    run = tracekit.ingest([path], tmp_path / "run", jobs=1)
    got = run.sql("SELECT dur_ns, bytes, library, collective FROM collectives WHERE library = 'symm_mem' "
                  "ORDER BY ts_ns").to_pylist()
    assert len(expect) == 73
    assert [(r["dur_ns"], r["bytes"]) for r in got] == expect
    assert {(r["library"], r["collective"]) for r in got} == {("symm_mem", "allreduce")}
    # comm time: the union of these and the NCCL kernel, from the raw times
    spans = sorted((round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)) for e in evs
                   if e.get("cat") == "kernel" and ("multimem_all_reduce_kernel" in e["name"] or "nccl" in e["name"]))
    union, end = 0, None
    for a, b in spans:
        if end is None or a > end:
            union, end = union + b - a, b
        elif b > end:
            union, end = union + b - end, b
    (w,) = run.sql("SELECT comm_ns FROM comm_overlap WHERE step IS NULL").to_pylist()
    assert w["comm_ns"] == union


def test_dlrm_transfer_busbw_against_the_raw_kernels(tmp_path):
    """The first alltoall of the 8-rank DLRM step: bytes from c10d::alltoall_base_'s input shape, the
    transfer time the fastest rank's kernel, nccl-tests' (n-1)/n with n = the 8 ranks that ran it."""
    d = shared_traces() / "param_dlrm_kineto_8rank"
    durs, nbytes = [], set()
    for path in sorted(d.glob("*.json")):
        evs = events(path)
        first_comm = min((e for e in evs if e.get("cat") == "kernel" and "nccl" in e.get("name", "")),
                         key=lambda e: e["ts"])
        assert "SendRecv" in first_comm["name"]
        durs.append(first_comm["dur"])
        op = min(recorded_ops(path, "c10d::alltoall_base_"), key=lambda e: e["ts"])
        nbytes.add(math.prod(op["args"]["Input Dims"][1]) * ELEM_BYTES[op["args"]["Input type"][1]])
    (b,) = nbytes
    expect = b / (min(durs) * 1000) * 7 / 8
    run = tracekit.ingest([d], tmp_path / "run", jobs=2)
    (i,) = run.sql("SELECT collective, bytes, expected_ranks, status, transfer_busbw_gbps FROM collective_instances "
                   "ORDER BY first_start_ns LIMIT 1").to_pylist()
    assert (i["collective"], i["bytes"], i["expected_ranks"], i["status"]) == ("alltoall", b, 8, "clean")
    assert i["transfer_busbw_gbps"] == pytest.approx(expect)
    rep = {(r["collective"], r["size_bucket"]): r for r in tracekit.report(run, "collectives").to_pylist()}
    row = [r for (c, _), r in rep.items() if c == "alltoall" and r["instances"] == 2][0]
    assert row["transfer_busbw_p50_gbps"] == pytest.approx(expect)
    # per kernel: the group size is not in the trace, but every instance was run by all 8 ranks; the
    # exact per-kernel value is checked in test_dlrm_kernel_busbw_takes_the_group_size_of_its_matched_instance
    assert row["busbw_p50_gbps"] is not None


def test_step_windows_partition_the_trace_diff_control_trace(tmp_path):
    """hta_trace_diff/control: each step's window from the raw ProfilerStep starts (to the next step's
    start; the last step to the later of its CPU end and the end of the GPU work it launched), inside the
    span of the GPU activity; per-step idle is window minus the busy union inside it, and adds up to the
    whole trace's idle."""
    path = shared_traces() / "hta_trace_diff" / "control" / "control.json.gz"
    evs = events(path)

    def ns(us):
        return round(us * 1000)

    gpu = [e for e in evs if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    launch = {e["args"]["correlation"]: ns(e["ts"]) for e in evs
              if e.get("ph") == "X" and e.get("cat") == "cuda_runtime"}
    steps = sorted((ns(e["ts"]), ns(e["ts"] + e["dur"]), int(e["name"].split("#")[1])) for e in evs
                   if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#"))
    spans = sorted((ns(e["ts"]), ns(e["ts"] + e.get("dur", 0)), launch.get(e["args"].get("correlation"))) for e in gpu)
    lo, hi = min(a for a, _, _ in spans), max(b for _, b, _ in spans)
    last_start, last_end, last = steps[-1]
    last_gpu = max(b for a, b, t in spans if t is not None and last_start <= t < last_end)
    windows = {n: (s, steps[i + 1][0] if i + 1 < len(steps) else max(e, last_gpu)) for i, (s, e, n) in enumerate(steps)}

    def busy_in(w0, w1):  # union of the GPU intervals clipped to [w0, w1)
        total, cur = 0, w0
        for a, b, _ in spans:
            a, b = max(a, cur), min(b, w1)
            if b > a:
                total, cur = total + b - a, b
        return total

    run = tracekit.ingest([path], tmp_path / "run", jobs=1)
    got = {r["step"]: r for r in run.sql("SELECT * FROM comm_overlap").to_pylist()}
    for n, (w0, w1) in windows.items():
        c0, c1 = max(w0, lo), min(w1, hi)
        assert (got[n]["window_ns"], got[n]["busy_ns"]) == (c1 - c0, busy_in(c0, c1)), n
    whole = got[None]
    assert whole["window_ns"] == hi - lo and whole["busy_ns"] == busy_in(lo, hi)
    assert sum(r["idle_ns"] for k, r in got.items() if k is not None) == whole["idle_ns"]


def test_dlrm_kernel_busbw_takes_the_group_size_of_its_matched_instance(tmp_path):
    """DLRM's kernels say no group size, but each clean instance was run by all 8 ranks of the world:
    a kernel's busbw uses that size (group_size_source 'matched instance'). Rank 0's first alltoall:
    bytes from c10d::alltoall_base_'s input shape, its own kernel's duration, nccl-tests' 7/8."""
    d = shared_traces() / "param_dlrm_kineto_8rank"
    (path,) = [p for p in sorted(d.glob("*.json")) if json.loads(p.read_text())["distributedInfo"]["rank"] == 0]
    evs = events(path)
    k = min((e for e in evs if e.get("cat") == "kernel" and "nccl" in e.get("name", "")), key=lambda e: e["ts"])
    op = min(recorded_ops(path, "c10d::alltoall_base_"), key=lambda e: e["ts"])
    nbytes = math.prod(op["args"]["Input Dims"][1]) * ELEM_BYTES[op["args"]["Input type"][1]]
    run = tracekit.ingest([d], tmp_path / "run", jobs=2)
    (r,) = run.sql("SELECT group_size, group_size_source, bytes, busbw_gbps FROM collectives WHERE rank = 0 "
                   "ORDER BY ts_ns LIMIT 1").to_pylist()
    assert r == {"group_size": 8, "group_size_source": "matched instance", "bytes": nbytes,
                 "busbw_gbps": pytest.approx(nbytes / (k["dur"] * 1000) * 7 / 8)}
    got = tracekit.report(run, "collectives").to_pylist()
    assert got and all(row["busbw_p50_gbps"] is not None for row in got)


def test_dlrm_uneven_alltoall_instance(tmp_path):
    """DLRM's 4th alltoall: every rank's c10d::alltoall_base_ records output and input shapes; the input is
    the same on every rank, the outputs differ (uneven splits). busbw assumes even splits: left out; the
    instance says how uneven it is and its throughput (all ranks' bytes over the exchange)."""
    d = shared_traces() / "param_dlrm_kineto_8rank"
    ins, outs, starts, ends, sent = [], [], [], [], 0
    for path in sorted(d.glob("*.json")):
        evs = events(path)
        op = sorted(recorded_ops(path, "c10d::alltoall_base_"), key=lambda e: e["ts"])[3]
        out_n, in_n = math.prod(op["args"]["Input Dims"][0]), math.prod(op["args"]["Input Dims"][1])
        ins.append(in_n)
        outs.append(out_n)
        sent += in_n * ELEM_BYTES[op["args"]["Input type"][1]]
        launches = {e["args"]["correlation"]: e for e in evs if e.get("cat") == "cuda_runtime"}
        (k,) = [e for e in evs if e.get("cat") == "kernel" and "nccl" in e["name"]
                and (lt := launches.get(e["args"]["correlation"])) is not None
                and op["ts"] <= lt["ts"] <= op["ts"] + op["dur"] and lt["tid"] == op["tid"]]
        starts.append(round(k["ts"] * 1000))
        ends.append(round((k["ts"] + k["dur"]) * 1000))
    assert len(set(ins)) == 1 and len(set(outs)) > 1
    run = tracekit.ingest([d], tmp_path / "run", jobs=2)
    a2a = run.sql("SELECT * FROM collective_instances WHERE collective = 'alltoall' "
                  "ORDER BY first_start_ns").to_pylist()
    i = a2a[3]
    assert (i["status"], i["uneven"], i["transfer_busbw_gbps"]) == ("clean", True, None)
    assert i["in_imbalance"] == pytest.approx(1.0)
    assert i["out_imbalance"] == pytest.approx(max(outs) / (sum(outs) / len(outs)))
    assert i["exchange_ns"] == max(ends) - max(starts)
    assert i["throughput_gbps"] == pytest.approx(sent / (max(ends) - max(starts)))
    assert all(j["uneven"] is False and j["transfer_busbw_gbps"] is not None for j in a2a[:3])
