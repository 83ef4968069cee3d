"""Runs of the earlier layouts (a link to a hidden sibling version; a plain directory with manifest.json at
its top) open where they are, and the next ingest or --rederive migrates them to a plain directory with
versions inside (issue 29, item 1); a migration killed between its two renames is read where it lies
and finished by the next writer. Opening never writes (issue 17)."""

import json
import os
import shutil

import pytest

from tests.conftest import dist, write_trace
from tracekit.cli.main import main

DEAD = 2**22 + 12345  # beyond pid_max's default: no such process


@pytest.fixture
def trace(tmp_path):
    return write_trace(tmp_path / "rank0.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                                                   "ts": 1, "dur": 1}], header=dist(0, world=1))


def _version_of(run):
    return run / "versions" / (run / "CURRENT").read_text().strip()


def make_link_layout(tmp_path, trace):
    """A run as the earlier layout wrote it, by hand: ``r`` a link to ``.r.v-PID-NS`` (the version, its
    manifest at the top) and ``.r.lock`` beside."""
    assert main(["ingest", str(trace), "-o", str(tmp_path / "new")]) == 0
    shutil.copytree(_version_of(tmp_path / "new"), tmp_path / f".r.v-{DEAD}-1")
    shutil.rmtree(tmp_path / "new")
    os.symlink(f".r.v-{DEAD}-1", tmp_path / "r")
    (tmp_path / ".r.lock").write_text(f"pid {DEAD}")
    return tmp_path / "r"


def make_plain_layout(tmp_path, trace):
    """A run of the first layout: ``r`` itself the version (manifest.json at its top)."""
    assert main(["ingest", str(trace), "-o", str(tmp_path / "new")]) == 0
    shutil.copytree(_version_of(tmp_path / "new"), tmp_path / "r")
    shutil.rmtree(tmp_path / "new")
    return tmp_path / "r"


@pytest.fixture
def moved_aside(tmp_path, trace):
    """A migration of a link-layout run killed between removing the link and renaming the new directory in."""
    assert main(["ingest", str(trace), "-o", str(tmp_path / ".r.tracekit-migrate")]) == 0
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
@pytest.mark.parametrize("make", [make_link_layout, make_plain_layout])
def test_a_run_of_an_earlier_layout_opens_where_it_is_and_moves_nothing(tmp_path, trace, capsys, argv, make):
    """Opening never writes: the run is read as the earlier layout left it (one event, as the trace holds)."""
    r = make(tmp_path, trace)
    before = _listing(tmp_path)
    capsys.readouterr()
    assert main([a.format(r=r) for a in argv]) == 0
    if argv[0] == "sql":
        assert capsys.readouterr().out == "n\n1\n"
    assert _listing(tmp_path) == before


@pytest.mark.parametrize("make", [make_link_layout, make_plain_layout])
@pytest.mark.parametrize("write", [["ingest", "{t}", "-o", "{r}", "--force"], ["ingest", "--rederive", "{r}"]])
def test_the_next_writer_migrates_a_run_of_an_earlier_layout(tmp_path, trace, capsys, make, write):
    """After the next ingest (or --rederive) the run is a plain directory with its versions inside, answers
    as before, and nothing of the earlier layout is left beside it (a user's sibling stays)."""
    r = make(tmp_path, trace)
    (tmp_path / "r.old-2024").mkdir()  # the user's
    capsys.readouterr()
    assert main(["sql", str(r), "SELECT count(*) AS n FROM gpu_kernels", "--format", "csv"]) == 0
    before = capsys.readouterr().out
    assert main([a.format(t=trace, r=r) for a in write]) == 0, capsys.readouterr().err
    assert not r.is_symlink() and (r / "CURRENT").is_file() and not (r / "manifest.json").exists()
    assert json.loads((_version_of(r) / "manifest.json").read_text())["format"] == "tracekit run"
    assert sorted(os.listdir(tmp_path)) == ["r", "r.old-2024", "rank0.json"]
    assert sorted(os.listdir(r / "versions")) == [_version_of(r).name]
    capsys.readouterr()
    assert main(["sql", str(r), "SELECT count(*) AS n FROM gpu_kernels", "--format", "csv"]) == 0
    assert capsys.readouterr().out == before == "n\n1\n"  # the trace's one kernel


@pytest.mark.parametrize("argv", [["sql", "{r}", "SELECT count(*) AS n FROM events", "--format", "csv"],
                                  ["report", "{r}", "summary", "--format", "csv"]])
def test_the_cli_reads_a_run_a_killed_migration_left_aside(moved_aside, capsys, argv):
    before = _listing(moved_aside.parent)
    capsys.readouterr()
    assert main([a.format(r=moved_aside) for a in argv]) == 0, capsys.readouterr().err
    if argv[0] == "sql":
        assert capsys.readouterr().out == "n\n1\n"
    assert _listing(moved_aside.parent) == before
    assert not os.path.lexists(moved_aside)


def test_the_next_ingest_puts_a_run_left_aside_back(moved_aside):
    assert main(["ingest", str(moved_aside.parent / "rank0.json"), "-o", str(moved_aside)]) == 0
    assert (moved_aside / "CURRENT").is_file()
    assert sorted(os.listdir(moved_aside.parent)) == ["r", "rank0.json"]


def test_a_failed_open_leaves_a_dead_ingests_leftovers_alone(tmp_path, capsys):
    """A run that is not there, beside what looks like a dead ingest's leftovers of the earlier layout:
    opening fails in one line and every one stays as it was."""
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
    """One line that says what to give (a reviewer: click's three said only the usage)."""
    assert main(["report", str(tmp_path / "nothing"), "summary"]) == 2
    err = capsys.readouterr().err
    assert "does not exist: give a run directory (`tracekit ingest TRACES -o RUN`" in err and err.count("\n") == 1


def test_a_query_that_spills_writes_nothing_into_the_run(tmp_path, trace, monkeypatch):
    """A query past the memory limit spills; by default DuckDB spills to ./.tmp, which is inside the run
    when a user stands in it. The spill goes to a private directory, gone once the run is closed."""
    import tracekit

    assert main(["ingest", str(trace), "-o", str(tmp_path / "r")]) == 0
    run = tracekit.open(tmp_path / "r")
    monkeypatch.chdir(run.version)
    before = _listing(run.version)
    run.sql("SET memory_limit = '30MB'; SET threads = 1")
    query = ("SELECT count(*) AS n FROM (SELECT i::VARCHAR || 'xxxxxxxxxxxxxxxxxxxx' AS s FROM range(2000000) t(i) "
             "ORDER BY hash(i))")
    assert run.sql(query).to_pylist() == [{"n": 2_000_000}]
    assert _listing(run.version) == before  # (DuckDB removes its .tmp when the connection closes: look before)
    (spill,) = run.sql("SELECT current_setting('temp_directory') AS d").to_pylist()
    assert os.path.isdir(spill["d"])  # it did spill
    run.close()
    assert not os.path.exists(spill["d"])
