"""A run or cache path holding glob characters ('[', '*', '?') is a path, not a pattern (issue 20, item 5:
DuckDB read the run's globs as character classes and found no file: an internal error)."""

import os

import pytest

from tests.conftest import dist, write_trace
from tracekit.cli.main import main


@pytest.fixture
def trace(tmp_path):
    evs = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": i, "dur": 1} for i in range(3)]
    return write_trace(tmp_path / "rank0.json", evs, header=dist(0, world=1))


@pytest.mark.parametrize("name", ["br[a]", "x[0-9]y", "star*", "what?"])
def test_a_run_under_a_glob_like_directory(tmp_path, trace, capsys, name):
    run = tmp_path / name / "run"
    run.parent.mkdir()
    assert main(["ingest", str(trace), "-o", str(run)]) == 0
    capsys.readouterr()
    assert main(["sql", str(run), "SELECT count(*) AS n FROM events", "--format", "csv"]) == 0  # read-only prompt
    assert capsys.readouterr().out == "n\n3\n"
    assert main(["report", str(run), "summary", "--format", "csv"]) == 0


def test_a_cache_under_a_glob_like_directory(tmp_path, trace, capsys, monkeypatch):
    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "c[1]"))
    assert main(["sql", str(trace), "SELECT count(*) AS n FROM events", "--format", "csv"]) == 0
    assert capsys.readouterr().out.endswith("n\n3\n")
    assert os.listdir(tmp_path / "c[1]")
