"""A run is a directory on a file system or s3://BUCKET/PREFIX (tests/cli/test_s3_runs.py): any other URL given
as a run (``-o gs://bucket/run``) is refused in one line, never written as a local folder named ``gs:`` (issue
39)."""

import os

import pytest

from tests.conftest import dist, write_trace
from tracekit.cli.main import main


@pytest.fixture
def trace(tmp_path):
    p = tmp_path / "rank0.json"
    write_trace(p, [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1}],
                header=dist(0, world=1))
    return p


@pytest.mark.parametrize("url", ["gs://bucket/run", "file:///tmp/run", "hdfs://nn:8020/run", "az://c/run"])
def test_ingest_to_a_url_is_refused_and_writes_nothing(trace, tmp_path, monkeypatch, capsys, url):
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path))
    assert main(["ingest", str(trace), "-o", url]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {url}: ") and "Traceback" not in err
    assert "a run is a directory" in err and "copy" in err  # what to do instead
    assert sorted(os.listdir(tmp_path)) == before  # no folder named 'gs:' (or 'file:', 'hdfs:')


def test_opening_a_url_as_a_run_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    os.makedirs("gs:/bucket/run")  # even where a local folder of that name exists (an earlier tracekit made one)
    assert main(["report", "gs://bucket/run", "summary"]) == 4
    err = capsys.readouterr().err
    assert err.startswith("error: gs://bucket/run: ") and "a run is a directory" in err


def test_a_windows_drive_or_a_plain_colon_is_a_path(trace, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["ingest", str(trace), "-o", "runs:a"]) == 0  # a colon alone makes no URL
    assert os.path.isdir(tmp_path / "runs:a")


def test_the_handler_and_the_reduce_refuse_a_url_at_once(tmp_path, monkeypatch, capsys):
    from tracekit.errors import TracekitError
    from tracekit.profiler import trace_handler

    monkeypatch.chdir(tmp_path)
    with pytest.raises(TracekitError, match=r"^gs://b/run: a URL tracekit does not read or write"):
        trace_handler(str(tmp_path / "t"), run="gs://b/run")  # when made, not in a part's process later
    assert main(["ingest", "--reduce", "gs://b/run"]) == 4
    assert capsys.readouterr().err.startswith("error: gs://b/run: a URL")
    assert os.listdir(tmp_path) == []
