"""A run is a plain directory: copied with cp -r or tar it answers as the original, rm -rf leaves nothing,
and tracekit deletes only what it made (issue 29, items 1-3)."""

import json
import os
import shutil
import subprocess
import tarfile

import pytest

from tests.conftest import dist, shared_traces, write_trace
from tracekit.cli.main import main
from tracekit.reports import REGISTRY


def one_kernel_trace(path, n=1):
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_trace(path, [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": 1 + 2 * i,
                               "dur": 1} for i in range(n)], header=dist(0, world=1))


def _answers(capsys, run):
    """Every report of ``run`` as CSV, with its exit code."""
    out = {}
    for name in REGISTRY:
        capsys.readouterr()
        code = main(["report", str(run), name, "--format", "csv"])
        out[name] = (code, capsys.readouterr().out)
    return out


@pytest.mark.slow
def test_a_run_copied_with_cp_or_tar_answers_every_report_as_the_original(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["ingest", str(shared_traces() / "hta_trace_filter_2rank"), "-o", str(run), "--jobs", "1"]) == 0
    assert main(["ingest", str(shared_traces() / "hta_trace_filter_2rank"), "-o", str(run), "--jobs", "1",
                 "--force"]) == 0  # (a second version: what is copied is the run, not one version)
    original = _answers(capsys, run)
    assert sum(code == 0 for code, _ in original.values()) >= 8  # the reports this trace answers
    (tmp_path / "elsewhere").mkdir()
    subprocess.run(["cp", "-r", str(run), str(tmp_path / "elsewhere" / "copied")], check=True)
    with tarfile.open(tmp_path / "run.tar", "w") as tar:
        tar.add(run, arcname="run")
    (tmp_path / "untarred").mkdir()
    with tarfile.open(tmp_path / "run.tar") as tar:
        tar.extractall(tmp_path / "untarred")
    shutil.rmtree(run)  # the copies stand alone: nothing of theirs is left at the original place
    assert _answers(capsys, tmp_path / "elsewhere" / "copied") == original
    assert _answers(capsys, tmp_path / "untarred" / "run") == original


def test_rm_rf_of_a_run_leaves_nothing_behind(tmp_path):
    trace = one_kernel_trace(tmp_path / "t" / "rank0.json")
    for _ in range(2):
        assert main(["ingest", str(trace), "-o", str(tmp_path / "out" / "run"), "--force"]) == 0
    shutil.rmtree(tmp_path / "out" / "run")
    assert os.listdir(tmp_path / "out") == []


def test_a_failed_first_ingest_leaves_nothing_beside_or_in_place(tmp_path, capsys):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "rank0.json").write_text('{"traceEvents": [{"ph": "X", "name": ')  # cut short
    assert main(["ingest", str(tmp_path / "t"), "-o", str(tmp_path / "out" / "run")]) != 0
    assert "Traceback" not in capsys.readouterr().err
    assert os.listdir(tmp_path / "out") == []  # no run, no lock file, no hidden version


def test_a_failed_reingest_leaves_the_run_as_it_was_and_nothing_beside_it(tmp_path):
    trace = one_kernel_trace(tmp_path / "t" / "rank0.json")
    assert main(["ingest", str(trace), "-o", str(tmp_path / "out" / "run")]) == 0
    before = sorted(os.listdir(tmp_path / "out" / "run" / "versions"))
    trace.write_text('{"traceEvents": [')
    assert main(["ingest", str(trace), "-o", str(tmp_path / "out" / "run"), "--force"]) != 0
    assert os.listdir(tmp_path / "out") == ["run"]
    assert sorted(os.listdir(tmp_path / "out" / "run" / "versions")) == before


@pytest.mark.parametrize("exists", [True, False])
def test_force_never_touches_a_users_siblings(tmp_path, capsys, exists):
    """Issue 29, item 1: ``-o results --force`` removed a sibling results.old-2024/ and .results.tmp-77777/
    (and moved the first into place when results did not exist)."""
    trace = one_kernel_trace(tmp_path / "t" / "rank0.json")
    if exists:
        assert main(["ingest", str(trace), "-o", str(tmp_path / "results")]) == 0
    for name in ("results.old-2024", ".results.tmp-77777", ".results.v-77777-1"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "mine.txt").write_text("the user's\n")
    assert main(["ingest", str(trace), "-o", str(tmp_path / "results"), "--force"]) == 0, capsys.readouterr().err
    for name in ("results.old-2024", ".results.tmp-77777", ".results.v-77777-1"):
        assert (tmp_path / name / "mine.txt").read_text() == "the user's\n"
    assert sorted(os.listdir(tmp_path)) == sorted([".results.tmp-77777", ".results.v-77777-1", "results",
                                                   "results.old-2024", "t"])
    capsys.readouterr()
    assert main(["sql", str(tmp_path / "results"), "SELECT count(*) AS n FROM gpu_kernels", "--format", "csv"]) == 0
    assert capsys.readouterr().out == "n\n1\n"  # the run is the trace's, with its one kernel


def test_cache_clear_removes_only_the_runs_the_cache_made(tmp_path, monkeypatch, capsys):
    """Issue 29, item 2: ``cache clear`` removed every run-* folder of $TRACEKIT_CACHE."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("TRACEKIT_CACHE", str(cache))
    trace = one_kernel_trace(tmp_path / "t" / "rank0.json")
    assert main(["report", str(trace), "summary"]) == 0  # fills the cache with one run
    (ours,) = [n for n in os.listdir(cache) if n.startswith("run-")]
    (cache / "run-1").mkdir()
    (cache / "run-1" / "notes.txt").write_text("mine\n")
    (cache / "run-final").mkdir()
    shutil.copytree(cache / ours, cache / "run-final" / "copy")  # even holding a copy of a cached run
    (cache / "run-0123456789abcdef").mkdir()  # a cache's name, without tracekit's marker
    capsys.readouterr()
    assert main(["cache", "list", "--format", "csv"]) == 0
    listed = capsys.readouterr().out
    names = [os.path.basename(line.split(",")[0]) for line in listed.splitlines()[1:]]
    assert names == [ours]  # not run-1, run-final nor the unmarked run-0123456789abcdef
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out == f"{cache}: removed 1 cached run\n"
    assert sorted(os.listdir(cache)) == ["run-0123456789abcdef", "run-1", "run-final"]
    assert (cache / "run-1" / "notes.txt").read_text() == "mine\n"
    assert (cache / "run-final" / "copy" / "CURRENT").is_file()


def test_ingest_adopts_an_empty_directory_and_refuses_one_without_the_marker(tmp_path, capsys):
    trace = one_kernel_trace(tmp_path / "t" / "rank0.json")
    (tmp_path / "empty").mkdir()
    assert main(["ingest", str(trace), "-o", str(tmp_path / "empty")]) == 0
    assert json.loads((tmp_path / "empty" / "tracekit-run.json").read_text())["format"] == "tracekit run directory"
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "versions").mkdir()  # tracekit's names, not its marker
    (tmp_path / "full" / "CURRENT").write_text("v-1-1\n")
    capsys.readouterr()
    assert main(["ingest", str(trace), "-o", str(tmp_path / "full"), "--force"]) == 1
    assert "is not a tracekit run" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path / "full")) == ["CURRENT", "versions"]


def test_current_never_leads_out_of_the_run(tmp_path, capsys):
    trace = one_kernel_trace(tmp_path / "t" / "rank0.json")
    assert main(["ingest", str(trace), "-o", str(tmp_path / "run")]) == 0
    (tmp_path / "run" / "CURRENT").write_text("../../t\n")
    capsys.readouterr()
    assert main(["sql", str(tmp_path / "run"), "SELECT 1"]) == 4
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "without a complete version" in err and err.count("\n") == 1


def test_a_run_opens_from_any_working_directory_by_a_relative_path(tmp_path, capsys, monkeypatch):
    trace = one_kernel_trace(tmp_path / "t" / "rank0.json")
    assert main(["ingest", str(trace), "-o", str(tmp_path / "a" / "run")]) == 0
    monkeypatch.chdir(tmp_path / "a")
    capsys.readouterr()
    assert main(["sql", "run", "SELECT count(*) AS n FROM events", "--format", "csv"]) == 0
    assert capsys.readouterr().out == "n\n1\n"


def test_a_run_copied_without_its_events_says_what_needs_them(tmp_path, capsys):
    """The facts answer without the events files (a run copied without them); what needs the events (the
    dependency graph of replay) says so in one line, and the HTML page and advise still answer (found when the
    page's critical path and advise's replay met such a run: an IOException from DuckDB)."""
    from tests.conftest import live
    from tests.tracegen import kernel, step
    from tracekit.commands.html import write_html

    (tmp_path / "t").mkdir()  # a step: the replay has one to time (without any it says so, events or not)
    trace = write_trace(tmp_path / "t" / "rank0.json", [step(1, 0, 100), *kernel("k", 10, 5)], header=dist(0, world=1))
    assert main(["ingest", str(trace), "-o", str(tmp_path / "run")]) == 0
    shutil.rmtree(live(tmp_path / "run") / "events")
    capsys.readouterr()
    assert main(["report", str(tmp_path / "run"), "summary", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("rank,steps,")
    assert main(["report", str(tmp_path / "run"), "replay"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "events files are not here" in err, err
    assert main(["advise", str(tmp_path / "run")]) == 0
    import tracekit
    write_html(tracekit.open(tmp_path / "run"), str(tmp_path / "page.html"))
    assert "events files are not here" in (tmp_path / "page.html").read_text()
