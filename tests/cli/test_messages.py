"""Error messages as a user sees them: the command run from its own directory, the exit code and the
exact line on stderr."""

import gzip
import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT, dist, write_trace


def tk(*args, cwd, env=None):
    r = subprocess.run([sys.executable, "-m", "tracekit.cli.main", *map(str, args)], cwd=cwd, capture_output=True,
                       text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    return r.returncode, r.stdout, r.stderr


def test_first_60_kb_of_a_gz_says_where_the_stream_is_cut(tmp_path):
    events = [{"ph": "X", "name": f"op{i}", "ts": i, "dur": 1, "pid": 1, "tid": 1} for i in range(200_000)]
    whole = gzip.compress(json.dumps({"traceEvents": events}).encode())
    assert len(whole) > 61_440
    (tmp_path / "cut.json.gz").write_bytes(whole[:61_440])
    for cmd in (["ingest", "cut.json.gz", "-o", "run"], ["report", "cut.json.gz", "summary"]):
        code, out, err = tk(*cmd, cwd=tmp_path)
        assert code == 2 and out == ""
        assert err.startswith(f"error: {tmp_path / 'cut.json.gz'}: the gzip stream is truncated at byte 61,440 "
                              "(the file ends before its compressed stream does"), err


def test_an_array_of_numbers_is_not_called_a_non_object(tmp_path):
    (tmp_path / "a.json").write_text("[1,2,3]")
    code, out, err = tk("ingest", "a.json", "-o", "run", cwd=tmp_path)
    assert code == 2
    assert err == (f"error: {tmp_path / 'a.json'} (byte 1 of the JSON text): this JSON array holds no event objects: "
                   "an array-format trace (Chrome's JSON Array Format) is a list of {...} events, this one starts "
                   "with '1,2,3]'. Pass the .json/.json.gz files that torch.profiler wrote\n")
    # and an array of events is a trace
    (tmp_path / "b.json").write_text('[{"ph":"X","name":"op","ts":1,"dur":2,"pid":1,"tid":1}]')
    code, out, err = tk("sql", "b.json", "SELECT count(*) AS n FROM events", "--format", "csv", cwd=tmp_path)
    assert code == 0 and out == "n\n1\n", err


def _fsdp(tmp_path):
    shutil.copytree(ROOT / "examples" / "traces" / "fsdp", tmp_path / "traces")
    return {"TRACEKIT_CACHE": str(tmp_path / "cache")}


@pytest.mark.slow
def test_misspelled_table_suggests_a_tracekit_view_by_the_name_the_user_typed(tmp_path):
    env = _fsdp(tmp_path)
    code, out, err = tk("sql", "traces", "SELECT * FROM waits", cwd=tmp_path, env=env)
    assert code != 0 and out == ""
    assert err == ("error: SQL failed on run traces: no table or view named waits; did you mean collective_waits? "
                   "(`tracekit schema RUN` lists every column)\n")
    code, out, err = tk("sql", "traces", "SELECT * FROM pg_const", cwd=tmp_path, env=env)  # DuckDB: pg_constraint
    assert "pg_constraint" not in err
    assert "no table or view named pg_const; the tables and views are: events, traces, " in err
    # a run directory: named as typed, never its internal version directory
    assert tk("ingest", "traces", "-o", "run", cwd=tmp_path, env=env)[0] == 0
    code, out, err = tk("sql", "run", "SELECT * FROM waits", cwd=tmp_path, env=env)
    assert err.startswith("error: SQL failed on run run: no table or view named waits"), err
    assert ".v-" not in err and str(tmp_path / "cache") not in err


@pytest.mark.slow
def test_doctor_fail_on_gives_ci_an_exit_code(tmp_path):
    # rank 0 of a 2-rank job alone, without a ProfilerStep: two warnings (rank 1 missing, no steps)
    write_trace(tmp_path / "rank0.json", [{"ph": "X", "name": "op", "ts": 1, "dur": 2, "pid": 1, "tid": 1}],
                header=dist(0, world=2))
    env = {"TRACEKIT_CACHE": str(tmp_path / "cache")}
    code, out, err = tk("doctor", "rank0.json", "--format", "csv", cwd=tmp_path, env=env)
    assert code == 0 and ",warning,1," in out, out
    assert ",warning,0,1 rank has no ProfilerStep: per-step figures are all step -1," in out  # one rank: singular
    code, out, err = tk("ingest", "rank0.json", "-o", "run", "--no-progress", cwd=tmp_path, env=env)
    assert code == 0 and out.startswith("run: 1 trace, 1 event in "), out
    code, out, err = tk("doctor", "rank0.json", "--format", "csv", "--fail-on", "warning", cwd=tmp_path, env=env)
    assert code == 6 and ",warning,1," in out
    assert err.endswith("doctor: 2 findings at warning or above (--fail-on warning)\n"), err
    code, out, err = tk("doctor", "rank0.json", "--format", "csv", "--fail-on", "error", cwd=tmp_path, env=env)
    assert code == 0 and err == ""
    code, out, err = tk("doctor", str(ROOT / "examples" / "traces" / "fsdp"), "--fail-on", "warning", cwd=tmp_path,
                        env=env)
    assert code == 0, err


@pytest.mark.slow
def test_timeline_steps_outside_the_run_name_the_steps_it_has(tmp_path):
    def op(name, ts, dur):
        return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": 1}
    write_trace(tmp_path / "rank0.json", [op("ProfilerStep#551", 0, 100), op("aten::mm", 10, 5),
                                          op("ProfilerStep#552", 100, 100), op("aten::add", 110, 5)],
                header=dist(0, world=1))
    env = {"TRACEKIT_CACHE": str(tmp_path / "cache")}
    code, out, err = tk("timeline", "rank0.json", "-o", "t.json", "--steps", "999:1000", cwd=tmp_path, env=env)
    assert (code, out, err) == (1, "", "error: --steps 999:1000: the run has no such step; its steps are 551-552\n")
    assert not (tmp_path / "t.json").exists()
    code, out, err = tk("timeline", "rank0.json", "-o", "t.json", "--steps", "552", cwd=tmp_path, env=env)
    assert code == 0, err
    names = {e["name"] for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"] if e["ph"] == "X"}
    assert "aten::add" in names and "aten::mm" not in names  # step 552 alone


def test_doctor_in_a_terminal_prints_one_block_per_finding(tmp_path):
    """Two of a world of four: doctor's 'ranks missing' finding is a block (severity: check, then the
    ranks, the finding and the fix on lines of their own), not a five-column table of sentences that an
    80-column terminal cannot hold; --format csv keeps the columns."""
    ev = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]
    for r in (0, 1):
        write_trace(tmp_path / f"rank{r}.json", ev, header={"distributedInfo": {"rank": r, "world_size": 4}})
    code, out, err = tk("doctor", str(tmp_path), cwd=tmp_path)
    assert code == 0, err
    lines = out.splitlines()
    heads = [i for i, line in enumerate(lines) if line == "warning: missing ranks"]
    assert len(heads) == 1, out
    block = lines[heads[0] + 1:]
    labels = [line.split()[0] for line in block if line.startswith("   ") and line[3] != " "]
    assert labels[:3] == ["ranks", "finding", "fix"], out
    assert "2,3" in block[0] and "2 of 4" in out, out
    assert all(len(line.rstrip()) <= 100 for line in lines)
    code, out, _ = tk("doctor", str(tmp_path), "--format", "csv", cwd=tmp_path)
    assert out.splitlines()[0].split(",")[:2] == ["check", "severity"]


def test_every_file_left_out_says_why_each_was(tmp_path):
    """With --on-error skip and no file that parses, the error gives each file's reason (it said 'see the
    reasons above' with nothing above it) and exits 2, as without the option (README: 2 is a file that is not
    a readable trace; it exited 1); without it, the advice to leave the file out comes once."""
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "a.json").write_text("")
    (bad / "b.json").write_text("hi\n")
    code, out, err = tk("ingest", "bad", "-o", "run", "--on-error", "skip", cwd=tmp_path,
                        env={"TRACEKIT_CACHE": str(tmp_path / "cache")})
    assert code == 2 and out == ""
    assert err.startswith("error: no trace could be ingested: every file was left out (2): "), err
    assert f"{bad / 'a.json'}: the file is empty" in err and f"{bad / 'b.json'} (byte 0 of the JSON text)" in err
    assert "--on-error" not in err
    code, out, err = tk("ingest", "bad", "-o", "run", cwd=tmp_path, env={"TRACEKIT_CACHE": str(tmp_path / "cache")})
    assert code == 2 and err.count("--on-error skip") == 1, err


def test_one_unreadable_file_is_not_told_to_leave_itself_out(tmp_path):
    """One trace, its gzip stream cut: the error says where and to re-copy it, and no more: '--on-error skip
    ingests the other files' named files there are none of (and, among several files, the advice came twice:
    the file's own and the ingest's, 'Re-copy the file.; or leave this file out ...')."""
    data = gzip.compress(b'{"traceEvents": []}')
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "rank0.json.gz").write_bytes(data[: len(data) // 2])
    env = {"TRACEKIT_CACHE": str(tmp_path / "cache")}
    code, out, err = tk("ingest", "one/rank0.json.gz", "-o", "run", cwd=tmp_path, env=env)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"error: {tmp_path / 'one' / 'rank0.json.gz'}: the gzip stream is truncated"), err
    assert err.rstrip().endswith("Re-copy the file.") and "--on-error" not in err, err
    write_trace(tmp_path / "one" / "rank1.json", [{"ph": "X", "name": "op", "ts": 1, "dur": 2, "pid": 1, "tid": 1}],
                header=dist(1))
    code, out, err = tk("ingest", "one", "-o", "run", cwd=tmp_path, env=env)
    assert code == 2 and err.count("--on-error skip") == 1 and ".;" not in err, err


@pytest.mark.parametrize("typed, meant", [("stragglrs", "stragglers"), ("critical-path", "critical_path"),
                                          ("summry", "summary")])
def test_a_misspelled_report_gets_a_did_you_mean(tmp_path, capsys, typed, meant):
    """Also seen in issue 40: a typo'd report name got the list but no suggestion (schema's has one)."""
    from tracekit.cli.main import main
    from tracekit.reports import REGISTRY
    (tmp_path / "t.json").write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, '
                                     '"ts": 1, "dur": 1}]}')
    assert main(["report", str(tmp_path / "t.json"), typed]) == 2  # a command line naming nothing (README)
    assert capsys.readouterr().err == (f"error: no report named {typed!r}; did you mean {meant}? reports: "
                                       f"{', '.join(REGISTRY)}\n")


def test_ingesting_a_run_says_it_is_a_run(tmp_path, capsys):
    """Also seen in issue 40: `tracekit ingest RUN -o X` said only 'no trace files'; a run given as traces is
    named as a run, with what to do with it."""
    from tracekit.cli.main import main
    write_trace(tmp_path / "rank0.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1,
                                           "dur": 1}], header=dist(0, world=1))
    run = tmp_path / "run"
    assert main(["ingest", str(tmp_path / "rank0.json"), "-o", str(run)]) == 0
    capsys.readouterr()
    assert main(["ingest", str(run), "-o", str(tmp_path / "x")]) == 2  # (README: a path naming no trace)
    assert capsys.readouterr().err == (f"error: {run}: a tracekit run, not traces: report on it as it is (tracekit "
                                       f"report {run} summary), or derive its facts again with tracekit ingest "
                                       f"--rederive {run}\n")
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("command", ["ingest", "report"])
@pytest.mark.parametrize("holds", [[], ["notes.txt", "sub/trace.txt"]])
def test_no_traces_says_what_to_give(tmp_path, capsys, command, holds):
    """A folder with no .json/.json.gz said only 'no trace files': the line also names what writes them and
    what to give instead."""
    from tracekit.cli.main import main
    d = tmp_path / "empty"
    d.mkdir()
    for name in holds:
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text("{}")
    argv = ["ingest", str(d), "-o", str(tmp_path / "x")] if command == "ingest" else ["report", str(d), "summary"]
    assert main(argv) == 2  # README's exit codes: a command line naming what does not exist
    err = capsys.readouterr().err
    assert err.startswith(f"error: no trace files (.json, .json.gz) under {d}: ") and err.count("\n") == 1
    for words in ("on_trace_ready", "tensorboard_trace_handler", "trace files"):
        assert words in err.split(f"under {d}: ")[1]
    assert not (tmp_path / "x").exists()


def test_timeline_names_a_thread_the_trace_gives_no_number_for(tmp_path):
    """Also seen in issue 40: CPU events without a numeric pid and tid (none, or names such as "Spans") went
    to a track named 'CPU None thread None'."""
    import tracekit
    t = tmp_path / "t.json"
    t.write_text(json.dumps({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 1, "ts": 10, "dur": 5},
        {"ph": "X", "cat": "user_annotation", "name": "no ids", "ts": 20, "dur": 5},
        {"ph": "X", "cat": "python_function", "name": "named ids", "pid": "Spans", "tid": "PyTorch", "ts": 30,
         "dur": 5}]}))
    tracekit.timeline(t, tmp_path / "out.json")
    events = json.loads((tmp_path / "out.json").read_text())["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    tracks = {e["name"]: names[e["tid"]] for e in events if e["ph"] == "X"}
    assert tracks == {"aten::mm": "CPU 100 thread 1", "no ids": "CPU, no process or thread id in the trace",
                      "named ids": "CPU, no process or thread id in the trace"}


@pytest.mark.parametrize("report", ["replay", "critical_path"])
def test_reports_of_steps_say_there_are_none_before_reading_the_graph(tmp_path, capsys, monkeypatch, report):
    """Issue 40, item 5: with 10,000 ranks, replay and critical_path spent 2-4 minutes building the graph
    before saying that the traces hold no ProfilerStep. A trace without one is answered without the graph."""
    import tracekit.graph.reports as graph_reports  # (first: it binds from_run's functions as it is imported)
    from tracekit.cli.main import main
    from tracekit.graph import from_run

    def no_graph(*_a, **_k):
        raise AssertionError("the graph was read")

    monkeypatch.setattr(from_run, "build", no_graph)
    monkeypatch.setattr(from_run, "path_replay", no_graph)
    import tracekit.graph.split as graph_split
    monkeypatch.setattr(graph_split, "split", no_graph)  # (replay's graph: the split one)
    monkeypatch.setattr(graph_reports, "path_replay", no_graph)
    write_trace(tmp_path / "rank0.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1,
                                           "dur": 1}], header=dist(0, world=1))
    assert main(["report", str(tmp_path / "rank0.json"), report, "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1  # the header, no row
    assert "no rows: the traces hold no ProfilerStep" in err


def test_advise_says_there_are_no_steps_before_reading_the_graph(tmp_path, capsys, monkeypatch):
    """Issue 40, item 5: advise built the graph of 10,000 ranks (minutes) to replay steps the traces do not
    hold. Without a ProfilerStep its note says why there is no replay, and the graph is never read."""
    from tracekit.cli.main import main
    from tracekit.commands import advise_replay

    def no_graph(*_a, **_k):
        raise AssertionError("the graph was read")

    monkeypatch.setattr(advise_replay, "split", no_graph)
    write_trace(tmp_path / "rank0.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1,
                                           "dur": 5}], header=dist(0, world=1))
    assert main(["advise", str(tmp_path / "rank0.json"), "--format", "csv"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "no replay (the traces hold no ProfilerStep, and the replay times steps)" in err


def test_the_page_says_there_are_no_steps_before_reading_the_graph(tmp_path, monkeypatch):
    """Issue 40, item 5: the page built the graph of 10,000 ranks (its critical path section) to find no
    step. Without a ProfilerStep the section says so, and the graph is never read."""
    from tracekit.cli.main import main
    from tracekit.graph import from_run

    def no_graph(*_a, **_k):
        raise AssertionError("the graph was read")

    monkeypatch.setattr(from_run, "build", no_graph)
    monkeypatch.setattr(from_run, "path_replay", no_graph)
    write_trace(tmp_path / "rank0.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1,
                                           "dur": 5}], header=dist(0, world=1))
    assert main(["html", str(tmp_path / "rank0.json"), "-o", str(tmp_path / "page.html")]) == 0
    assert "No critical path: the traces hold no ProfilerStep" in (tmp_path / "page.html").read_text()
