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


def test_a_backslash_in_the_path_is_one_line(tmp_path, trace, capsys):
    """DuckDB reads '\\' as a directory separator (the fuzzer found an internal error): refused, in one line."""
    d = tmp_path / "a\\b"
    d.mkdir()
    assert main(["ingest", str(trace), "-o", str(d / "run")]) == 4
    err = capsys.readouterr().err
    assert err == (f"error: {d / 'run'}: a backslash in the path, which DuckDB reads as a directory separator; "
                   "move the run (or $TRACEKIT_CACHE) to a path without one\n")
    assert os.listdir(d) == []


def test_a_failed_query_is_one_line(tmp_path, trace, capsys):
    run = tmp_path / "run"
    assert main(["ingest", str(trace), "-o", str(run)]) == 0
    capsys.readouterr()
    assert main(["sql", str(run), "SELECT * FROM read_text('~/.bashrc')"]) == 5
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "file system operations are disabled" in err
    from tracekit.query_errors import one_line
    assert one_line('Parser Error: syntax error at or near "x"\n\nLINE 1: SELECT x x x\n                 ^') == \
        'Parser Error: syntax error at or near "x" LINE 1: SELECT x x x'
