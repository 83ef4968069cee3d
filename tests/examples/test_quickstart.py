"""The README's quickstart, exactly as written: examples/quickstart.py copied alone into an empty project
directory, run there with torchrun, then tracekit validate and tracekit report on the trace directory."""

import json
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason="the quickstart trains a model")
ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_readme_shows_the_quickstart_verbatim():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert (ROOT / "examples" / "quickstart.py").read_text() in blocks


@pytest.mark.slow  # torchrun, 2 ranks
def test_quickstart_then_validate_and_report(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "cache"))
    project = tmp_path / "project"  # a user's project: the one file, nothing else from this repository
    project.mkdir()
    shutil.copy(ROOT / "examples" / "quickstart.py", project / "quickstart.py")
    d = project / "traces" / "quick"
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                          "quickstart.py", "--trace-dir", "traces/quick"],
                         capture_output=True, text=True, timeout=600, cwd=project)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"traces of 2 ranks in {d}" in run.stdout
    assert sorted(p.name for p in (d / "iteration_4").iterdir()) == ["rank0_trace.json.gz", "rank1_trace.json.gz"]
    tk = [sys.executable, "-m", "tracekit.cli.main"]
    v = subprocess.run(tk + ["validate", "traces/quick", "--format", "json"], capture_output=True, text=True,
                       timeout=300, cwd=project)
    assert v.returncode == 0, v.stderr
    rows = json.loads(v.stdout)
    # DDP on 2 ranks, 2 profiled steps: the model's allreduces, measured with no error
    assert rows and all(r["count_error_pct"] == 0 and r["bytes_error_pct"] == 0 for r in rows), rows
    assert {(r["collective"], r["group"]) for r in rows} == {("allreduce", "DP")}
    s = subprocess.run(tk + ["report", "traces/quick", "summary", "--format", "json"], capture_output=True,
                       text=True, timeout=300, cwd=project)
    assert s.returncode == 0, s.stderr
    summary = json.loads(s.stdout)
    assert [r["rank"] for r in summary] == [0, 1] and all(r["steps"] == 2 and r["collectives"] == 2 for r in summary)
    # the docstring's steps: torch.profiler numbers from 0, waits through 0, warms up on 1, records 2 and 3
    q = subprocess.run(tk + ["sql", "traces/quick", "SELECT DISTINCT step FROM steps ORDER BY step",
                             "--format", "json"],
                       capture_output=True, text=True, timeout=300, cwd=project)
    assert q.returncode == 0, q.stderr
    assert [r["step"] for r in json.loads(q.stdout)] == [2, 3]
    assert "records steps 2 and 3" in " ".join((ROOT / "examples" / "quickstart.py").read_text().split())
    # the PyTorch version tracekit's trace handler records, shown by the identity report
    import torch
    i = subprocess.run(tk + ["report", "traces/quick", "identity", "--format", "json"], capture_output=True,
                       text=True, timeout=300, cwd=project)
    assert {r["item"]: r["value"] for r in json.loads(i.stdout)}["PyTorch"] == torch.__version__


@pytest.mark.slow  # torchrun, 2 ranks
def test_quickstart_with_a_run_answers_as_an_ingest_of_its_traces(tmp_path, monkeypatch, capsys):
    """--run-dir RUN: each rank makes its part as its trace is written, rank 0 reduces them at the end; the run
    answers every report as `tracekit ingest DIR` does (issue 39)."""
    from tests.cli.test_rank_parts import answers
    from tracekit.cli.main import main

    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "cache"))
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "examples" / "quickstart.py", project / "quickstart.py")
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                          "quickstart.py", "--trace-dir", "traces/quick", "--run-dir", "runs/quick"],
                         capture_output=True, text=True, timeout=600, cwd=project)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"run of 2 ranks in {project / 'runs' / 'quick'}" in run.stdout
    assert sorted(p.name for p in (project / "runs" / "quick" / "parts" / "iteration_4").iterdir()) == [
        ".group-0000000-0000001.lock", "group-0000000-0000001", "rank-0", "rank-1"]  # (the last writer joined them)
    assert main(["ingest", str(project / "traces" / "quick"), "-o", str(tmp_path / "central")]) == 0
    assert answers(capsys, project / "runs" / "quick") == answers(capsys, tmp_path / "central")


@pytest.mark.slow  # torchrun, 2 ranks
def test_quickstart_with_a_run_in_s3_answers_as_an_ingest_of_its_traces(tmp_path, monkeypatch, capsys):
    """--run-dir s3://bucket/prefix: each rank's handler uploads its part, rank 0 reduces them in the store; the
    run answers every report as `tracekit ingest DIR` does (issue 39; the S3 server: tests/s3_server.py)."""
    from tests.cli.test_rank_parts import answers
    from tests.s3_server import aws_env, s3_server
    from tracekit.cli.main import main

    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "cache"))
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "examples" / "quickstart.py", project / "quickstart.py")
    with s3_server() as server:
        aws_env(monkeypatch, server, tmp_path)
        url = f"s3://{server['bucket']}/runs/quick"
        run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                              "quickstart.py", "--trace-dir", "traces/quick", "--run-dir", url],
                             capture_output=True, text=True, timeout=600, cwd=project)
        assert run.returncode == 0, run.stderr[-3000:]
        assert f"run of 2 ranks in {url}; next: tracekit report {url} summary" in run.stdout
        assert not (project / "s3:").exists()
        assert main(["ingest", str(project / "traces" / "quick"), "-o", str(tmp_path / "central")]) == 0
        monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "reader-cache"))  # fetched, as another machine would
        assert answers(capsys, url) == answers(capsys, tmp_path / "central")
