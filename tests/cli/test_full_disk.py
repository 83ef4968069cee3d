"""A full disk is not bad input (issue 20, item 7): the ingest fails whole, the run that was there stays as
it was, and the one line says what could not be written and how much room is left. With --on-error skip
too: a skip is for a trace that cannot be read, never for a disk that cannot be written."""

import errno
import os
import subprocess
import sys

import duckdb
import pytest

from tests.conftest import dist, live, write_trace
from tracekit.cli.main import main


@pytest.fixture
def traces(tmp_path):
    d = tmp_path / "traces"
    d.mkdir()
    for r in (0, 1):
        write_trace(d / f"rank{r}.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1,
                                           "dur": 1, "args": {"stream": 7}}], header=dist(r, world=2))
    return d


def _snapshot(run):
    real = str(live(run))
    return real, {p: open(os.path.join(r, p), "rb").read() for r, _, fs in os.walk(real) for p in fs}


def _ingest(traces, run, *extra):
    return main(["ingest", str(traces), "-o", str(run), "--jobs", "1", "--force", *extra])


@pytest.mark.parametrize("on_error", [[], ["--on-error", "skip"]])
def test_enospc_writing_one_ranks_events(traces, tmp_path, capsys, monkeypatch, on_error):
    run = tmp_path / "run"
    assert _ingest(traces, run) == 0
    before = _snapshot(run)
    import tracekit.ingestion.one_file as one_file
    real_writer = one_file.pq.ParquetWriter

    def writer(path, *a, **k):  # the disk fills up while rank 1's events are written
        if "part-00001" in str(path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real_writer(path, *a, **k)

    monkeypatch.setattr(one_file.pq, "ParquetWriter", writer)
    capsys.readouterr()
    assert _ingest(traces, run, *on_error) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: cannot write the run {run}: No space left on device ")
    assert "part-00001" in err and f"MB free on the file system of {tmp_path}" in err
    assert "rank1.json" not in err and "bug" not in err  # not blamed on the trace
    assert _snapshot(run) == before  # the complete run stays, not a one-rank run
    assert sorted(os.listdir(tmp_path)) == ["run", "traces"]  # nothing beside the run
    assert os.listdir(run / "versions") == [os.path.basename(before[0])]  # nor a half-built version in it


DUCKDB_ENOSPC = ('IO Error: Async write failed: {"exception_type":"IO","exception_message":"Could not write file '
                 '\\"{path}\\": No space left on device","errno":"28"}')


@pytest.mark.parametrize("stage", ["derive", "reduce"])
@pytest.mark.parametrize("on_error", [[], ["--on-error", "skip"]])
def test_enospc_in_duckdb(traces, tmp_path, capsys, monkeypatch, stage, on_error):
    run = tmp_path / "run"
    assert _ingest(traces, run) == 0
    before = _snapshot(run)

    def full(*a, **k):
        raise duckdb.IOException(DUCKDB_ENOSPC.replace("{path}", str(tmp_path / "x.parquet")))

    if stage == "derive":
        import tracekit.materialize as materialize
        monkeypatch.setattr(materialize, "_create", full)  # a rule made a table
        monkeypatch.setattr(materialize, "_write_rule", full)  # a rule written straight to its file
    else:
        import tracekit.ingestion.run_writer as run_writer
        monkeypatch.setattr(run_writer, "reduce_run", full)
    capsys.readouterr()
    assert _ingest(traces, run, *on_error) == 1
    err = capsys.readouterr().err
    assert err == (f"error: cannot write the run {run}: No space left on device (writing {tmp_path / 'x.parquet'}; "
                   f"{err.split('; ')[1]}; nothing was replaced (an earlier run there is intact). Free space, "
                   "or choose another -o\n")
    assert err.split("; ")[1].endswith(f"MB free on the file system of {tmp_path})")
    assert _snapshot(run) == before


def test_a_really_full_file_system(traces, tmp_path, capsys):
    """On a 300 KB tmpfs (needs root; skipped elsewhere): fails whole, with --on-error skip too."""
    disk = tmp_path / "tiny"
    disk.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(disk)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        big = traces.parent / "big"
        big.mkdir()
        for r in (0, 1):
            write_trace(big / f"rank{r}.json", [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7,
                                                 "ts": i, "dur": 1, "args": {"stream": 7}} for i in range(20000)],
                        header=dist(r, world=2))
        capsys.readouterr()
        assert _ingest(big, disk / "run", "--on-error", "skip") == 1
        err = capsys.readouterr().err
        assert err.startswith(f"error: cannot write the run {disk / 'run'}: No space left on device (writing ")
        assert err.count("\n") == 1 and "MB free on the file system of" in err
        assert sorted(os.listdir(disk)) == []  # the run this first ingest made is gone again
    finally:
        subprocess.run(["umount", str(disk)], check=False)


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_WORKER_FAULT = '''
import errno, os, sys, time
import tracekit.ingestion.task as task
real = task.ingest_file
def fault(path, *a, **k):
    if path.endswith("rank0.json"):  # the disk fills up in one worker ...
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
    time.sleep(600)  # ... while the other is stuck (as a write to a full disk can be)
task.ingest_file = fault
from tracekit.cli.main import main
sys.exit(main(["ingest", sys.argv[1], "-o", sys.argv[2], "--jobs", "2", "--force"]))
'''


def test_a_worker_failing_while_another_hangs(traces, tmp_path):
    """The pool's shutdown after a worker's failure is bounded (it waited for every worker, one stuck on a
    full disk included, holding the writer lock: every later ingest of the run was refused), and the
    next ingest then works. (60 s: a bound for a hang, far above the few seconds it takes.)"""
    run = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-c", _WORKER_FAULT, str(traces), str(run)], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"error: cannot write the run {run}: No space left on device")
    assert _ingest(traces, run) == 0  # the lock was released, by the workers too
