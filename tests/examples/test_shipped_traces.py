"""The runs shipped in examples/traces: their communication is the model's, and they validate exactly."""

import decimal
import gzip
import json
import pathlib

import pytest

import tracekit

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHIPPED = sorted(p.name for p in (ROOT / "examples" / "traces").iterdir() if p.is_dir() and any(p.glob("iteration_*")))
# examples/traces/sweep, sweep-small and sweep-pp: folders of runs, one per plan (examples/traces/sweep/record.py)
SWEEP = sorted(f"{d}/{p.name}" for d in ("sweep", "sweep-small", "sweep-pp")
               for p in (ROOT / "examples" / "traces" / d).iterdir() if p.is_dir())


def raw(path):
    """A trace's JSON with exact decimal timestamps."""
    return json.loads(gzip.open(path).read(), parse_float=decimal.Decimal)


def union_ns(spans):
    total, end = 0, None
    for a, b in sorted(spans):
        if end is None or a > end:
            total, end = total + b - a, b
        elif b > end:
            total, end = total + b - end, b
    return total


def gloo_ops(trace):
    """The job's Gloo ops of a raw trace: gloo:* complete events, less the marker allreduces older
    tracekit ran (recorded under tracekit_config.markers by their element count)."""
    markers = {int(k) for k in trace.get("tracekit_config", {}).get("markers", {})}
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and e.get("name", "").startswith("gloo:"):
            dims = e.get("args", {}).get("Input Dims", [[]])[0]
            numel = 1
            for d in dims:
                numel *= d
            if not (e["name"] == "gloo:all_reduce" and numel in markers):
                yield e


def test_ddp_summary_comm_is_the_union_of_the_jobs_gloo_ops(tmp_path):
    d = ROOT / "examples" / "traces" / "ddp"
    summary = {r["rank"]: r for r in tracekit.report(tracekit.ingest([d], tmp_path / "run", jobs=1),
                                                      "summary").to_pylist()}
    for rank in (0, 1):
        trace = raw(d / "iteration_3" / f"rank{rank}_trace.json.gz")
        ops = list(gloo_ops(trace))
        spans = [(int(e["ts"] * 1000), int((e["ts"] + e["dur"]) * 1000)) for e in ops]
        assert summary[rank]["collectives"] == len(ops) == 1  # DDP's one bucket: 540 KB of fp32 gradients
        assert summary[rank]["comm_ms"] == pytest.approx(union_ns(spans) / 1e6, abs=1e-6)


@pytest.mark.parametrize("name", SHIPPED + SWEEP)
def test_shipped_example_validates_exactly(name, tmp_path):
    run = tracekit.ingest([ROOT / "examples" / "traces" / name], tmp_path / "run", jobs=1)
    rows = tracekit.validate(run).to_pylist()
    assert rows
    for r in rows:
        assert r["measured_count"] == r["predicted_count"] > 0, r
        assert r["bytes_error_pct"] == 0.0, r


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_example_runs_no_tracekit_collective(name):
    """The shipped traces name their Gloo threads' groups in the config; no marker op is in them."""
    for rank in (0, 1):
        # the profiler names the folder after the step it wrote at: iteration_3 for 2 steps, 7 for the planted 4
        (trace,) = (ROOT / "examples" / "traces" / name).glob(f"iteration_*/rank{rank}_trace.json.gz")
        config = raw(trace)["tracekit_config"]
        assert "markers" not in config and config["gloo_threads"], config


def test_compiled_example_launches_its_allreduces_from_compiled_graphs():
    for rank in (0, 1):
        trace = raw(ROOT / "examples" / "traces" / "tp-compile" / "iteration_3" / f"rank{rank}_trace.json.gz")
        names = [e["name"] for e in trace["traceEvents"] if e.get("ph") == "X"]
        assert trace["tracekit_config"]["plan"]["compile"] == "inductor"
        # Megatron by hand: 2 layers x (2 forward + 4 backward) allreduces, each a functional op (inductor
        # keeps the in-place variant) over one Gloo allreduce
        assert names.count("_c10d_functional::all_reduce_") == names.count("gloo:all_reduce") == 12
