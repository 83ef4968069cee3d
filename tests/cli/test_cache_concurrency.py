"""The cache and several processes (issue 20, item 8): a second process opening the same traces waits for
the first's fill (and says so) instead of failing; eviction and `cache clear` leave alone a run that
another process reads or writes, and never a version being built."""

import os
import subprocess
import sys
import threading
import time

import pytest

import tracekit
from tests.conftest import dist, write_trace
from tracekit import cache
from tracekit.cli.main import main
from tracekit.layout.versions import writer_lock


@pytest.fixture
def traces(tmp_path):
    d = tmp_path / "traces"
    d.mkdir()
    for r in (0, 1):
        write_trace(d / f"rank{r}.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1,
                                           "dur": 1}], header=dist(r, world=2))
    return d


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_second_open_waits_for_the_first_fill(traces, own_cache):
    out = cache.dir_for([str(traces)])
    held, release = threading.Event(), threading.Event()

    def first_fill():  # another process holds the run's writer lock while it fills it
        with writer_lock(out):
            held.set()
            release.wait(60)

    t = threading.Thread(target=first_fill)
    t.start()
    held.wait(10)
    p = subprocess.Popen([sys.executable, "-m", "tracekit.cli.main", "sql", str(traces),
                          "SELECT count(*) AS n FROM events", "--format", "csv"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err_seen = ""
    deadline = time.monotonic() + 60
    while "waiting for it" not in err_seen and time.monotonic() < deadline:
        err_seen += p.stderr.readline()
    assert "is ingesting these traces; waiting for it (at most" in err_seen
    assert p.poll() is None  # it waits, it did not fail
    release.set()
    t.join()
    out_text, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert out_text.endswith("n\n2\n")


def test_eviction_leaves_a_run_another_reader_has_open(tmp_path, traces, own_cache, monkeypatch):
    reader = tracekit.open(traces)  # run A, open (as in another process: the lock is on the directory)
    a = reader.directory
    other = tmp_path / "other"
    other.mkdir()
    write_trace(other / "rank0.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1,
                                        "dur": 1}], header=dist(0, world=1))
    monkeypatch.setenv("TRACEKIT_CACHE_MAX_MB", "0.001")  # every run is over the cap
    tracekit.open(other)  # fills run B; the cap would evict A, which is in use
    assert os.path.isdir(a)
    assert reader.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 2}]
    reader.close()
    tracekit.open(other)  # now A is free to go
    assert not os.path.exists(a)


def test_clear_leaves_a_run_being_filled_and_its_lock(traces, own_cache, capsys):
    out = cache.dir_for([str(traces)])
    tracekit.open(traces).close()  # a complete cached run
    building = os.path.join(out, "versions", f"v-1-{os.getpid()}")
    with writer_lock(out):  # a re-fill in progress: its version being built
        os.makedirs(os.path.join(building, "events"))
        assert main(["cache", "clear"]) == 0
        assert capsys.readouterr().out.endswith("removed 0 cached runs; left 1 that another tracekit process is "
                                                "writing or reading\n")
        assert os.path.isdir(building) and os.path.isfile(os.path.join(out, "CURRENT"))
        assert os.path.exists(os.path.join(out, "writer.lock"))
    os.rmdir(os.path.join(building, "events"))
    os.rmdir(building)
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out.endswith("removed 1 cached run\n")
    assert not os.path.lexists(out)


def test_a_run_another_process_is_making_is_not_refused(tmp_path, capsys):
    """Found by the fuzz's concurrency class (issue 40's round, on the code before it too: 4 of 92 cases): a
    process filling a cached run checked the directory while another was writing the run's marker, saw
    the marker's temporary file, and refused the run as 'not a tracekit run'. The directory at that
    moment (its lock and the marker's temporary file) is one tracekit is making: the ingest goes on."""
    from tests.conftest import dist, write_trace
    from tracekit.cli.main import main

    (tmp_path / "t").mkdir()
    write_trace(tmp_path / "t" / "rank0.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                                                 "ts": 1, "dur": 1}], header=dist(0, world=1))
    run = tmp_path / "run"
    run.mkdir()
    (run / "writer.lock").write_text("")
    (run / "tracekit-run.json.tmp-999999").write_text('{"format": "tracekit run directory"')  # half written
    assert main(["ingest", str(tmp_path / "t" / "rank0.json"), "-o", str(run)]) == 0
    capsys.readouterr()
    assert main(["sql", str(run), "SELECT count(*) AS n FROM events", "--format", "csv"]) == 0
    assert capsys.readouterr().out == "n\n1\n"
