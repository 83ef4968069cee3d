"""The run cache: reused while inputs are unchanged, capped with least-recently-used eviction,
listed and cleared from the CLI."""

import os
import time

import tracekit
from tests.conftest import dist, write_trace
from tracekit.cli.main import main


def trace_dir(d, n_events):
    d.mkdir()
    write_trace(d / "rank0.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": i,
                                    "dur": 1} for i in range(n_events)], header=dist(0, world=1))
    return d


def test_cache_is_capped_least_recently_used_first(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "cache"))
    a, b, c = (trace_dir(tmp_path / n, 2000) for n in "abc")
    ra = tracekit.open(a)
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(ra.path) for f in fs)
    # room for two runs of this size, not three
    monkeypatch.setenv("TRACEKIT_CACHE_MAX_MB", str(2.5 * size / 1e6))
    time.sleep(0.05)
    rb = tracekit.open(b)
    time.sleep(0.05)
    assert tracekit.open(a).name == ra.name  # a used again: now b is the least recently used
    time.sleep(0.05)
    rc = tracekit.open(c)
    left = sorted(n for n in os.listdir(tmp_path / "cache") if n.startswith("run-"))
    assert left == sorted(os.path.basename(p) for p in (ra.name, rc.name)) and os.path.basename(rb.name) not in left
    assert main(["cache", "list", "--format", "csv"]) == 0
    listed = capsys.readouterr().out
    assert ra.name in listed and rc.name in listed and rb.name not in listed
    assert main(["cache", "clear"]) == 0
    assert "removed 2 cached runs" in capsys.readouterr().out
    assert os.listdir(tmp_path / "cache") == []
    assert a.exists() and b.exists()  # the traces are not touched


def test_run_repr_says_what_it_holds(tmp_path):
    run = tracekit.ingest([trace_dir(tmp_path / "t", 3)], tmp_path / "run", jobs=1)
    assert repr(run) == f"Run({str(tmp_path / 'run')!r}: 1 ranks [0], 3 events, 1 inputs)"


def test_report_help_lists_the_reports(capsys):
    from tracekit.reports import REGISTRY
    assert main(["report", "--help"]) == 0
    out = capsys.readouterr().out
    lines = [line.strip() for line in out.splitlines()]
    for name, rep in REGISTRY.items():
        assert f"{name:12s} {rep.summary}" in lines
