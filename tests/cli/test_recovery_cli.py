"""The command line finds a run that an ingest killed mid-swap left beside its place, as tracekit.open
does (click checked that the path exists first). Issue 20, item 12. Opening never writes (issue 17): the
run is read where it lies and the next ingest puts it back."""

import os
import shutil

import pytest

from tests.conftest import dist, write_trace
from tracekit.cli.main import main

DEAD = 2**22 + 12345  # beyond pid_max's default: no such process


@pytest.fixture
def moved_aside(tmp_path):
    write_trace(tmp_path / "rank0.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1,
                                            "dur": 1}], header=dist(0, world=1))
    assert main(["ingest", str(tmp_path / "rank0.json"), "-o", str(tmp_path / "r")]) == 0
    # a run of the old layout (a real directory), its swap killed between moving it aside and linking
    real = tmp_path / os.readlink(tmp_path / "r")
    os.unlink(tmp_path / "r")
    shutil.move(str(real), str(tmp_path / f"r.old-{DEAD}"))
    return tmp_path / "r"


def _listing(d):
    """Every path under ``d`` (links not followed) with its size: what a write would change."""
    out = {}
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            p = os.path.join(root, n)
            out[os.path.relpath(p, d)] = os.lstat(p).st_size if not os.path.isdir(p) else None
    return out


@pytest.mark.parametrize("argv", [["sql", "{r}", "SELECT count(*) AS n FROM events", "--format", "csv"],
                                  ["report", "{r}", "summary", "--format", "csv"],
                                  ["diff", "{r}", "{r}", "--format", "csv", "--only", "steps"]])
def test_the_cli_reads_the_run_where_it_was_left_and_moves_nothing(moved_aside, capsys, argv):
    """Opening never writes: the run the dead swap left at r.old-PID is read there (one event, as the
    trace above holds), and nothing beside it is renamed or removed; the next ingest puts it back."""
    before = _listing(moved_aside.parent)
    capsys.readouterr()
    assert main([a.format(r=moved_aside) for a in argv]) == 0, capsys.readouterr().err
    if argv[0] == "sql":
        assert capsys.readouterr().out == "n\n1\n"
    assert _listing(moved_aside.parent) == before
    assert not os.path.lexists(moved_aside)


def test_the_next_ingest_puts_the_run_back(moved_aside):
    assert main(["ingest", str(moved_aside.parent / "rank0.json"), "-o", str(moved_aside)]) == 0
    assert (moved_aside / "manifest.json").is_file()
    assert not list(moved_aside.parent.glob("r.old-*"))


def test_rederive_puts_the_run_back_and_derives_it(moved_aside, capsys):
    """--rederive is a writer: under the lock it puts the run back, then derives it (it said 'not a
    tracekit run' once the open path stopped putting it back)."""
    assert main(["ingest", "--rederive", str(moved_aside)]) == 0, capsys.readouterr().err
    assert (moved_aside / "manifest.json").is_file() and not list(moved_aside.parent.glob("r.old-*"))
    assert main(["sql", str(moved_aside), "SELECT count(*) AS n FROM gpu_kernels", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == ["n", "1"]  # the trace's one kernel


def test_a_failed_open_leaves_a_dead_ingests_leftovers_alone(tmp_path, capsys):
    """A run that is not there, beside what a dead ingest left (an unfinished version, a half-built
    directory, a link it never switched): opening fails in one line and every leftover stays as it was
    (the ingest that comes next, under the writer lock, cleans them)."""
    (tmp_path / f".r.v-{DEAD}-1").mkdir()  # unfinished: no manifest
    (tmp_path / f".r.v-{DEAD}-1" / "part.parquet").write_bytes(b"x" * 10)
    (tmp_path / f".r.tmp-{DEAD}").mkdir()
    os.symlink(f".r.v-{DEAD}-1", tmp_path / f".r.link-{DEAD}")
    before = _listing(tmp_path)
    assert len(before) == 4
    assert main(["report", str(tmp_path / "r"), "summary"]) == 2
    assert "does not exist" in capsys.readouterr().err
    import tracekit
    from tracekit.errors import TracekitError
    with pytest.raises(TracekitError):
        tracekit.open(tmp_path / "r")
    with pytest.raises(TracekitError):
        tracekit.Run(str(tmp_path / "r"))
    assert _listing(tmp_path) == before


def test_a_path_that_is_not_there_is_still_one_line(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nothing"), "summary"]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "Traceback" not in err


def test_a_query_that_spills_writes_nothing_into_the_run(moved_aside, monkeypatch):
    """A query past the memory limit spills; by default DuckDB spills to ./.tmp, which is inside the run
    when a user stands in it. The spill goes to a private directory, gone once the run is closed."""
    import tracekit

    assert main(["ingest", str(moved_aside.parent / "rank0.json"), "-o", str(moved_aside)]) == 0  # a run again
    run = tracekit.open(moved_aside)
    monkeypatch.chdir(run.path)
    before = _listing(run.path)
    run.sql("SET memory_limit = '30MB'; SET threads = 1")
    query = ("SELECT count(*) AS n FROM (SELECT i::VARCHAR || 'xxxxxxxxxxxxxxxxxxxx' AS s FROM range(2000000) t(i) "
             "ORDER BY hash(i))")
    assert run.sql(query).to_pylist() == [{"n": 2_000_000}]
    assert _listing(run.path) == before  # (DuckDB removes its .tmp when the connection closes: look before)
    (spill,) = run.sql("SELECT current_setting('temp_directory') AS d").to_pylist()
    assert os.path.isdir(spill["d"])  # it did spill
    run.close()
    assert not os.path.exists(spill["d"])
