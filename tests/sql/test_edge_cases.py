"""Hand-made traces that pin the edge cases of the communication views, with numbers worked by hand."""

import pytest

import tracekit
from tests.conftest import dist, write_trace
from tests.tracegen import cpu_op, kernel, step

WORLD = 4
DP = {"Process Group Name": "0", "Process Group Description": "DP", "Group size": WORLD}


def rank0():
    evs = [step(1, 0, 100)]
    # comm A, stream 20, [10, 30]: metadata on the kernel itself (newer PyTorch)
    evs += kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 10, 20, stream=20, launch=(9, 1),
                  **{"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024,
                     "dtype": "Float", "Seq": 5, **DP})
    # comm B, stream 21, [20, 40]: no args; its launching record_param_comms has them
    evs.append(cpu_op("record_param_comms", 18, 3, **{
        "Collective name": "_allgather_base", "In msg nelems": 256, "Out msg nelems": 1024,
        "dtype": "BFloat16", "Group size": WORLD, "Process Group Name": "1",
        "Process Group Description": "TP", "Seq": 2}))
    evs += kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 20, 20, stream=21,
                  launch=(19, 1))
    # comm C, zero length at 38, nothing but its name
    evs += kernel("ncclKernel_Broadcast_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 38, 0,
                  stream=22)
    # compute: [0, 15], nested [25, 35] ⊃ [27, 30], zero length at 12
    evs += kernel("gemm", 0, 15, launch=(0, 1))
    evs += kernel("outer", 25, 10)
    evs += kernel("inner", 27, 3)
    evs += kernel("empty", 12, 0)
    evs.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0, "tid": 9,
                "ts": 36, "dur": 2, "args": {"stream": 9, "correlation": 1, "device": 0}})
    return evs


def rank1():
    evs = [step(1, 0, 100)]
    evs += kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 15, 20, stream=20, launch=(14, 1),
                  **{"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024,
                     "dtype": "Float", "Seq": 5, **DP})
    evs += kernel("gemm", 0, 10)
    return evs


def rank3():  # no communication at all
    return [step(1, 0, 100)] + kernel("gemm", 0, 10)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("edge")
    for r, evs in ((0, rank0()), (1, rank1()), (3, rank3())):
        write_trace(d / f"rank{r}.json", evs, header=dist(r, world=WORLD))
    return tracekit.ingest([d], d / "run", jobs=1)


def rows(run, q):
    return run.sql(q).to_pylist()


def test_kernel_kinds(run):
    got = {(r["name"][:22], r["kind"]) for r in rows(run, "SELECT name, kind FROM gpu_kernels WHERE rank = 0")}
    assert got == {("ncclDevKernel_AllReduc", "comm"), ("ncclDevKernel_AllGathe", "comm"),
                   ("ncclKernel_Broadcast_R", "comm"), ("gemm", "compute"), ("outer", "compute"),
                   ("inner", "compute"), ("empty", "compute"), ("Memcpy DtoD (Device ->", "memory")}


def test_collectives_metadata_sources(run):
    got = rows(run, "SELECT collective, algorithm, protocol, pg_desc, group_size, dtype, in_nelems, out_nelems, "
                    "bytes, size_bucket, meta_source, busbw_gbps, algbw_gbps FROM collectives "
                    "WHERE rank = 0 ORDER BY ts_ns")
    a, b, c = got
    assert a == {"collective": "allreduce", "algorithm": "RING", "protocol": "LL", "pg_desc": "DP",
                 "group_size": 4, "dtype": "float32", "in_nelems": 1024, "out_nelems": 1024, "bytes": 4096,
                 "size_bucket": "4 KiB–8 KiB", "meta_source": "kernel args",
                 "algbw_gbps": pytest.approx(4096 / 20000), "busbw_gbps": pytest.approx(4096 / 20000 * 1.5)}
    # allgather: nccl-tests counts the full output buffer: 1024 x 2 bytes
    assert (b["collective"], b["pg_desc"], b["dtype"], b["bytes"], b["meta_source"]) == \
        ("allgather", "TP", "bfloat16", 2048, "launching CPU op")
    assert b["busbw_gbps"] == pytest.approx(2048 / 20000 * 3 / 4)
    assert (c["collective"], c["dtype"], c["bytes"], c["meta_source"], c["algbw_gbps"]) == \
        ("broadcast", "float32", None, "kernel name only", None)


def test_overlap_by_hand(run):
    (o,) = rows(run, "SELECT * FROM comm_overlap WHERE rank = 0 AND step IS NULL")
    us = 1000
    assert o["comm_ns"] == 30 * us  # [10, 40]
    assert o["compute_ns"] == 25 * us  # [0, 15] + [25, 35]
    assert o["overlap_ns"] == 15 * us  # [10, 15] + [25, 35]
    assert o["exposed_comm_ns"] == 15 * us  # [15, 25] + [35, 40]
    assert o["overlap_pct"] == pytest.approx(50.0)
    assert o["window_ns"] == 40 * us and o["busy_ns"] == 40 * us and o["idle_ns"] == 0
    (s,) = rows(run, "SELECT * FROM comm_overlap WHERE rank = 0 AND step = 1")
    assert {k: s[k] for k in ("comm_ns", "overlap_ns", "exposed_comm_ns")} == \
        {"comm_ns": 30 * us, "overlap_ns": 15 * us, "exposed_comm_ns": 15 * us}


def test_rank_without_comm(run):
    (o,) = rows(run, "SELECT comm_ns, compute_ns, overlap_pct, exposed_comm_ns FROM comm_overlap "
                     "WHERE rank = 3 AND step IS NULL")
    assert o == {"comm_ns": 0, "compute_ns": 10000, "overlap_pct": None, "exposed_comm_ns": 0}


def test_exposed_split_among_concurrent_kernels(run):
    got = {r["collective"]: r["exposed_ns"] for r in rows(
        run, "SELECT collective, exposed_ns FROM comm_exposure WHERE rank = 0")}
    # [15, 20] A alone; [20, 25] A and B share; [35, 40] B alone
    assert got == {"allreduce": pytest.approx(7500), "allgather": pytest.approx(7500), "broadcast": 0}
    by_group = {r["key"]: r["exposed_ms"] for r in tracekit.report(run, "exposed", by="group").to_pylist()}
    # DP: rank 0 (7.5 us) + rank 1 (its allreduce [15, 35] has no compute after 10 us: 20 us)
    assert by_group == {"DP": pytest.approx(0.0075 + 0.020), "TP": pytest.approx(0.0075),
                        "unknown": pytest.approx(0.0)}


def test_missing_rank_and_skew(run):
    (i,) = rows(run, "SELECT * FROM collective_instances WHERE instance_key = 'pg:0/seq:5'")
    assert i["ranks_present"] == 2 and i["expected_ranks"] == 4 and i["missing_ranks"] == 2
    assert i["ranks"] == "0,1" and i["mismatch"] is None and i["match_method"] == "pg_seq"
    assert i["start_skew_ns"] == 5000 and i["end_skew_ns"] == 5000 and i["last_rank"] == 1
    assert i["transfer_ns"] == 20000 and i["total_wait_ns"] == 5000
    # two of the group's four ranks: who came last among all four is unknown, so the instance is not
    # clean and names no straggler; the reports say what they left out and why
    assert i["status"] == "missing ranks"
    assert rows(run, "SELECT * FROM stragglers") == []
    from tracekit.table_meta import note_of
    for name in ("skew", "stragglers"):
        t = tracekit.report(run, name)
        assert t.num_rows == 0
        # left out: this instance, rank 0's allgather (pg 1, no partner) and its broadcast (stream 22)
        assert note_of(t).startswith("left out: 1 missing ranks, 2 single rank")


def test_reports_render_every_format(run, tmp_path):
    from tracekit.render import to_csv, to_json, to_markdown
    from tracekit.reports import REGISTRY
    for name in REGISTRY:
        t = tracekit.report(run, name)
        assert t.num_rows > 0 or name in ("skew", "stragglers", "why_late"), name  # no clean instance here (see above)
        assert to_csv(t).splitlines()[0] == ",".join(t.column_names)
        to_json(t), to_markdown(t)
