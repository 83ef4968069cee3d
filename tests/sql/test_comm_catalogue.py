"""Communication outside NCCL: kernels the catalogue (tracekit/comms/comm_kernels.csv) knows count as
communication in every figure. Names are as the public sources spell them (docs/definitions.md); the
expected times are worked out by hand from the timelines below."""

import pytest

import tracekit
from tests.conftest import dist, write_trace
from tests.tracegen import kernel, step
from tracekit.errors import TracekitError

DISPATCH = "void dpsk::ep::internode::dispatch<false, 8, true, 8>(int4*, float*, long*, float*)"
NOTIFY = "void dpsk::ep::internode::notify_dispatch<false, 4>(int const*, long*, int, int const*, int*)"
COMBINE = "void deep_ep::intranode::combine<__nv_bfloat16, 8, 768, 4096>(__nv_bfloat16*, float*, int*)"
ONE_SHOT = "void (anonymous namespace)::one_shot_all_reduce_kernel<float, 16, 8>(float**, float*, float*)"
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"


def one_rank(tmp_path, evs, world=2):
    write_trace(tmp_path / "rank0.json", evs, header=dist(0, world=world))
    return tracekit.ingest([tmp_path / "rank0.json"], tmp_path / "run", jobs=1)


def timeline():
    # step 1 spans 0-200 us. compute: GEMM 10-60 (stream 7). comm (stream 20): dispatch 40-100,
    # notify 100-105, combine 150-170, one-shot all-reduce 180-190.
    evs = [step(1, 0, 200)]
    evs += kernel(GEMM, 10, 50, stream=7, launch=(5, 1))
    evs += kernel(DISPATCH, 40, 60, stream=20, launch=(6, 1))
    evs += kernel(NOTIFY, 100, 5, stream=20, launch=(7, 1))
    evs += kernel(COMBINE, 150, 20, stream=20, launch=(8, 1))
    evs += kernel(ONE_SHOT, 180, 10, stream=20, launch=(9, 1))
    return evs


def test_ep_and_symmetric_memory_kernels_are_communication(tmp_path):
    run = one_rank(tmp_path, timeline())
    got = run.sql("SELECT kernel_name, library, comm_kind, collective, bytes, busbw_gbps FROM collectives "
                  "ORDER BY ts_ns").to_pylist()
    assert [(r["library"], r["comm_kind"], r["collective"], r["bytes"], r["busbw_gbps"]) for r in got] == [
        ("deepep", "ep_dispatch", "ep_dispatch", None, None),
        ("deepep", "sync", "sync", None, None),
        ("deepep", "ep_combine", "ep_combine", None, None),
        ("symm_mem", "collective", "allreduce", None, None)]
    # comm = [40,105) + [150,170) + [180,190) = 65 + 20 + 10 = 95 us; compute [10,60) = 50 us;
    # overlap = [40,60) = 20 us; exposed = 95 - 20 = 75 us
    (w,) = run.sql("SELECT comm_ns, compute_ns, overlap_ns, exposed_comm_ns FROM comm_overlap "
                   "WHERE step IS NULL").to_pylist()
    assert w == {"comm_ns": 95_000, "compute_ns": 50_000, "overlap_ns": 20_000, "exposed_comm_ns": 75_000}
    exposed = run.sql("SELECT sum(exposed_ns) AS e FROM comm_exposure").to_pylist()[0]["e"]
    assert exposed == pytest.approx(75_000)


def test_a_users_catalogue_adds_a_kernel(tmp_path, monkeypatch):
    extra = tmp_path / "mine.csv"
    extra.write_text("pattern,library,kind,collective,source\n%my_ring_allreduce%,inhouse,collective,allreduce,"
                     "our repo\n")
    evs = [step(1, 0, 100)] + kernel("void my_ring_allreduce<float>(float*)", 10, 30, launch=(5, 1))
    (tmp_path / "a").mkdir()
    run = one_rank(tmp_path / "a", evs)
    assert run.sql("SELECT count(*) AS n FROM collectives").to_pylist() == [{"n": 0}]
    monkeypatch.setenv("TRACEKIT_COMM_KERNELS", str(extra))
    with pytest.raises(TracekitError, match="tracekit ingest --rederive"):  # derived under another catalogue
        tracekit.open(str(tmp_path / "a" / "run"))
    reopened = tracekit.rederive(str(tmp_path / "a" / "run"))
    assert reopened.sql("SELECT library, collective, dur_ns FROM collectives").to_pylist() == [
        {"library": "inhouse", "collective": "allreduce", "dur_ns": 30_000}]


def test_a_bad_catalogue_is_named(tmp_path, monkeypatch):
    bad = tmp_path / "bad.csv"
    bad.write_text("pattern,library,kind\n%x%,lib,broadcastish\n")
    monkeypatch.setenv("TRACEKIT_COMM_KERNELS", str(bad))
    from tracekit.comms.comm_kernels import comm_kernel_rows
    with pytest.raises(TracekitError, match=r"bad\.csv: line 2: kind 'broadcastish' is not one of"):
        comm_kernel_rows()
