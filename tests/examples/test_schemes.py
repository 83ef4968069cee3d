"""Every parallelism scheme of examples/gpt runs on CPU (Gloo) and validates with zero error."""

import os
import pathlib
import subprocess
import sys

import pytest

import tracekit

torch = pytest.importorskip("torch", reason="the examples need torch (pip install torch==2.13.0)")
ROOT = pathlib.Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # every test trains with torchrun
SCHEMES = [("ddp", 2), ("zero1", 2), ("zero2", 2), ("fsdp", 2), ("tp", 2), ("tp-sp", 2), ("pp", 2), ("tp-dp", 4),
           ("pp-dp", 4)]


def train(scheme, nproc, out, *extra):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
                           str(ROOT / "examples" / "gpt" / "train.py"), "--parallel", scheme, "--trace-dir", str(out),
                           "--steps", "1", *extra], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.mark.parametrize("scheme, nproc", SCHEMES, ids=[s for s, _ in SCHEMES])
def test_scheme_validates_exactly(scheme, nproc, tmp_path):
    out = train(scheme, nproc, tmp_path / scheme)
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.json.gz"))
    assert files == [f"iteration_3/rank{r}_trace.json.gz" for r in range(nproc)]  # the hook's template
    run = tracekit.ingest([out], tmp_path / "run", jobs=1)
    rows = tracekit.validate(run).to_pylist()
    assert rows, "no collectives predicted or measured"
    for r in rows:
        assert r["group"] in ("DP", "TP", "PP"), r
        assert r["measured_count"] == r["predicted_count"] > 0, r
        assert r["measured_bytes"] == r["predicted_bytes"] > 0, r
        assert r["bytes_error_pct"] == 0.0


def test_pipeline_gpipe_schedule_too(tmp_path):
    out = train("pp", 2, tmp_path / "gpipe", "--schedule", "gpipe", "--micro-batches", "4")
    rows = tracekit.validate(tracekit.ingest([out], tmp_path / "run", jobs=1)).to_pylist()
    assert {(r["collective"], r["measured_count"], r["bytes_error_pct"]) for r in rows} == \
        {("send", 8, 0.0), ("recv", 8, 0.0)}


def test_readme_validate_sample_is_what_the_default_command_prints(tmp_path):
    """The README shows `train.py --parallel fsdp` (default steps) then `tracekit validate`: same numbers."""
    import re
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index("```\ncollective  group  predicted_count"):]
    shown = [line.split() for line in block.split("```")[1].strip().splitlines()[1:]]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = tmp_path / "fsdp"
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                           str(ROOT / "examples" / "gpt" / "train.py"), "--parallel", "fsdp", "--trace-dir", str(out)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = tracekit.validate(tracekit.ingest([out], tmp_path / "run", jobs=1)).to_pylist()
    printed = [[r["collective"], r["group"], f"{r['predicted_count']}", f"{r['measured_count']}",
                f"{r['count_error_pct']:.3f}", f"{r['predicted_bytes']:,}", f"{r['measured_bytes']:,}",
                f"{r['bytes_error_pct']:.3f}"] for r in rows]
    assert shown == printed
    assert re.search(r"--parallel fsdp --trace-dir traces/fsdp\ntracekit validate traces/fsdp", readme)


def test_compiled_model_runs_functional_collectives_and_validates_exactly(tmp_path):
    """torch.compile'd tensor parallelism: the allreduces are functional ops of the compiled graphs
    (aot_eager: the same graphs as inductor without generating code, so CI stays quick)."""
    import collections
    import gzip
    import json
    out = train("tp", 2, tmp_path / "tpc", "--compile", "aot_eager")
    for rank in (0, 1):
        trace = json.load(gzip.open(out / "iteration_3" / f"rank{rank}_trace.json.gz"))
        names = collections.Counter(e["name"] for e in trace["traceEvents"] if e.get("ph") == "X")
        # Megatron by hand: 2 layers x (2 allreduces forward + 4 backward), each from a compiled graph
        assert names["Torch-Compiled Region: 0/0"] == 1
        assert names["_c10d_functional::all_reduce"] == names["gloo:all_reduce"] == 12
        assert trace["tracekit_config"]["plan"]["compile"] == "aot_eager"
    rows = tracekit.validate(tracekit.ingest([out], tmp_path / "run", jobs=1)).to_pylist()
    assert [(r["collective"], r["group"], r["measured_count"], r["bytes_error_pct"]) for r in rows] == \
        [("allreduce", "TP", 24, 0.0)]
    # bytes by hand: 24 allreduces of a (4, 32, 64) float32 activation
    assert rows[0]["measured_bytes"] == 24 * 4 * 32 * 64 * 4


def test_run_dir_makes_the_run_beside_the_training(tmp_path):
    """train.py --run-dir RUN (issue 39): each rank's part made by the handler's process, rank 0 reduces; the
    run validates as an ingest of the traces does, and --after N times N steps after the profile."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                           str(ROOT / "examples" / "gpt" / "train.py"), "--parallel", "ddp", "--trace-dir",
                           str(tmp_path / "t"), "--steps", "1", "--run-dir", str(tmp_path / "run"), "--after", "3"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ddp: 3 steps after the profile: mean " in proc.stdout
    assert f"ddp: run of 2 ranks in {tmp_path / 'run'}" in proc.stdout
    central = tracekit.ingest([tmp_path / "t"], tmp_path / "central", jobs=1)
    assert tracekit.validate(tracekit.open(tmp_path / "run")).to_pylist() == tracekit.validate(central).to_pylist()
    assert tracekit.report(tmp_path / "run", "summary").to_pylist() == tracekit.report(central, "summary").to_pylist()
