"""The README's quickstart, exactly as written: torchrun examples/quickstart.py, then tracekit validate
and tracekit report on the trace directory."""

import json
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason="the quickstart trains a model")
ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_readme_shows_the_quickstart_verbatim():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert (ROOT / "examples" / "quickstart.py").read_text() in blocks


def test_quickstart_then_validate_and_report(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "cache"))
    d = tmp_path / "quick"
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                          str(ROOT / "examples" / "quickstart.py"), "--trace-dir", str(d)],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"traces of 2 ranks in {d}" in run.stdout
    assert sorted(p.name for p in (d / "iteration_4").iterdir()) == ["rank0_trace.json.gz", "rank1_trace.json.gz"]
    tk = [sys.executable, "-m", "tracekit.cli.main"]
    v = subprocess.run(tk + ["validate", str(d), "--format", "json"], capture_output=True, text=True, timeout=300)
    assert v.returncode == 0, v.stderr
    rows = json.loads(v.stdout)
    # DDP on 2 ranks, 2 profiled steps: the model's allreduces, measured with no error
    assert rows and all(r["count_error_pct"] == 0 and r["bytes_error_pct"] == 0 for r in rows), rows
    assert {(r["collective"], r["group"]) for r in rows} == {("allreduce", "DP")}
    s = subprocess.run(tk + ["report", str(d), "summary", "--format", "json"], capture_output=True, text=True,
                       timeout=300)
    assert s.returncode == 0, s.stderr
    summary = json.loads(s.stdout)
    assert [r["rank"] for r in summary] == [0, 1] and all(r["steps"] == 2 and r["collectives"] == 2 for r in summary)
