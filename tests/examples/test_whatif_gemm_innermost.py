"""whatif's GEMM time on CPU ranks counts each matrix multiply once: under tensor parallelism (DTensor) the
profiler records an aten::addmm/mm on the global shapes around the local op on the shard, and both were
summed, so tp's GEMMs looked twice as slow per FLOP as ddp's (docs/model.md said "half the rate"). Truth:
the raw JSON of the shipped sweep's tp recording: the GEMM ops that hold no other GEMM op, inside the
windows from each ProfilerStep's start to the next one's (the last: to its end), and their FLOPs from the
recorded shapes, whose rate must then match ddp's within 15 % (the same GEMMs, half the columns)."""

import gzip
import json
import pathlib

import pytest

import tracekit
from tracekit import sql_files

SWEEP = pathlib.Path(__file__).resolve().parents[2] / "examples" / "traces" / "sweep"
GEMMS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")


def _innermost(path: pathlib.Path) -> tuple[float, float]:
    """(ms, GFLOP) of the innermost GEMMs of the trace's ProfilerStep windows, from the raw JSON."""
    ev = [e for e in json.load(gzip.open(path))["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if str(e.get("name", "")).startswith("ProfilerStep#"))
    windows = [(s, steps[i + 1][0] if i + 1 < len(steps) else end) for i, (s, end) in enumerate(steps)]
    ops = [e for e in ev if e.get("cat") == "cpu_op" and e["name"] in GEMMS
           and any(a <= e["ts"] < b for a, b in windows)]
    ms = flop = 0.0
    for e in ops:
        inner = any(o is not e and o["tid"] == e["tid"] and e["ts"] <= o["ts"]
                    and o["ts"] + o["dur"] <= e["ts"] + e["dur"] for o in ops)
        if inner:
            continue
        dims = e["args"]["Input Dims"]
        a, b = (dims[1], dims[2]) if e["name"] in ("aten::addmm", "aten::baddbmm") else (dims[0], dims[1])
        flop += 2 * (a[0] * a[1] * b[1] if len(a) == 2 else a[0] * a[1] * a[2] * b[2])
        ms += e["dur"] / 1e3
    return ms, flop / 1e9


@pytest.mark.slow
def test_gemm_time_counts_the_innermost_op_once(tmp_path):
    rate = {}
    for plan in ("tp", "ddp"):
        path = next((SWEEP / plan).rglob("rank0*.json*"))
        ms, gflop = _innermost(path)
        run = tracekit.ingest([SWEEP / plan], tmp_path / plan, jobs=1)
        parts = {r["rank"]: r for r in run.sql(sql_files.load("reports", "_whatif_parts").text).to_pylist()}
        assert parts[0]["gemm_ns"] / 1e6 == pytest.approx(ms, abs=0.01)
        rate[plan] = gflop / ms
    assert rate["tp"] == pytest.approx(rate["ddp"], rel=0.15), rate


def test_gemms_inside_cpu_attention_are_the_attentions(tmp_path):
    """Hand-made (us): the math path of CPU attention, an aten::_scaled_dot_product_attention_math of 400
    holding two aten::bmm of 150; a separate aten::mm of 100 holding nothing. Attention 400 us, GEMMs 100 us
    (the bmm's are inside the attention's time; the innermost rule alone gave attention 0)."""
    from tests.conftest import dist, write_trace
    from tests.tracegen import cpu_op, step

    evs = [step(1, 0, 1000), cpu_op("aten::_scaled_dot_product_attention_math", 100, 400),
           cpu_op("aten::bmm", 120, 150), cpu_op("aten::bmm", 300, 150), cpu_op("aten::mm", 600, 100),
           cpu_op("gloo:all_reduce", 800, 50, tid=9, **{"Input Dims": [[64]], "Input type": ["float"]})]
    write_trace(tmp_path / "rank0.json", evs, header=dist(0, world=2, backend="gloo"))
    run = tracekit.ingest([tmp_path / "rank0.json"], tmp_path / "run", jobs=1)
    (r,) = run.sql(sql_files.load("reports", "_whatif_parts").text).to_pylist()
    assert (r["attention_ns"], r["gemm_ns"]) == (400_000, 100_000)
