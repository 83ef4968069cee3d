"""The CLI as a user meets it: exit codes, messages without tracebacks, manifest, no-op, atomicity."""

import json
import os
import subprocess
import sys

import pytest

import tracekit
from tests.conftest import dist, live, write_trace
from tracekit.cli.main import main
from tracekit.run_tables import SCHEMA_VERSION


def ev(name, ts, dur=1.0, **args):
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur, "args": args}


@pytest.fixture
def two_ranks(tmp_path):
    d = tmp_path / "traces"
    d.mkdir()
    for r in range(2):
        write_trace(d / f"rank{r}.json.gz", [ev("k", 10 + r), ev("ncclKernel_AllReduce", 20 + r)], header=dist(r))
    return d


def tk(*args):
    return subprocess.run([sys.executable, "-m", "tracekit.cli.main", *map(str, args)], capture_output=True,
                          text=True)


def test_ingest_then_sql_json(two_ranks, tmp_path):
    p = tk("ingest", two_ranks, "-o", tmp_path / "run")
    assert p.returncode == 0, p.stderr
    assert "2 traces, 4 events" in p.stdout
    q = tk("sql", tmp_path / "run", "SELECT rank, count(*) AS n FROM events GROUP BY rank ORDER BY rank",
           "--format", "json")
    assert json.loads(q.stdout) == [{"rank": 0, "n": 2}, {"rank": 1, "n": 2}]
    m = json.loads((live(tmp_path / "run") / "manifest.json").read_text())
    assert m["schema_version"] == SCHEMA_VERSION and len(m["inputs"]) == 2 and m["failures"] == []
    assert all(len(i["sha256"]) == 64 and i["bytes"] > 0 for i in m["inputs"])


def test_bad_input_message_and_exit_code_no_traceback(two_ranks, tmp_path):
    (two_ranks / "rank2.json").write_text('{"traceEvents": [{"ph": "X", "ts": 1,, }]}')
    p = tk("ingest", two_ranks, "-o", tmp_path / "run")
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert "rank2.json" in p.stderr and "malformed JSON" in p.stderr and "byte" in p.stderr
    assert not (tmp_path / "run").exists()
    assert not [n for n in os.listdir(tmp_path) if ".tmp-" in n]


def test_on_error_skip_records_the_reason(two_ranks, tmp_path):
    (two_ranks / "rank2.json").write_text('{"traceEvents": [')
    p = tk("ingest", two_ranks, "-o", tmp_path / "run", "--on-error", "skip")
    assert p.returncode == 0, p.stderr
    m = json.loads((live(tmp_path / "run") / "manifest.json").read_text())
    assert [i["rank"] for i in m["inputs"]] == [0, 1]
    assert m["failures"][0]["path"].endswith("rank2.json") and "truncated" in m["failures"][0]["reason"]


@pytest.mark.slow
def test_unchanged_inputs_are_a_noop_unless_force(two_ranks, tmp_path):
    run = tmp_path / "run"
    assert tk("ingest", two_ranks, "-o", run).returncode == 0
    stamp = (live(run) / "manifest.json").stat().st_mtime_ns
    p = tk("ingest", two_ranks, "-o", run)
    assert "up to date" in p.stdout and (live(run) / "manifest.json").stat().st_mtime_ns == stamp
    assert tk("ingest", two_ranks, "-o", run, "--force").returncode == 0
    assert (live(run) / "manifest.json").stat().st_mtime_ns != stamp


def test_failure_mid_ingest_keeps_the_earlier_run(two_ranks, tmp_path):
    run = tmp_path / "run"
    tracekit.ingest([two_ranks], run, jobs=1)
    before = (live(run) / "manifest.json").read_text()
    (two_ranks / "rank1.json.gz").write_bytes((two_ranks / "rank1.json.gz").read_bytes()[:-20])
    assert main(["ingest", str(two_ranks), "-o", str(run), "--jobs", "1"]) == 2
    assert (live(run) / "manifest.json").read_text() == before
    assert tracekit.open(run).sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 4}]


def test_duplicate_rank_and_missing_rank(tmp_path, capsys):
    d = tmp_path / "t"
    d.mkdir()
    write_trace(d / "a.json", [ev("k", 1)], header=dist(0))
    write_trace(d / "b.json", [ev("k", 1)], header=dist(0))
    assert main(["ingest", str(d), "-o", str(tmp_path / "run")]) == 3
    assert "two traces claim rank 0" in capsys.readouterr().err
    write_trace(d / "b.json", [ev("k", 1)])
    # several files, one without a rank anywhere: an error that says how to give it
    assert main(["ingest", str(d), "-o", str(tmp_path / "run")]) == 3
    assert "--rank b.json=N" in capsys.readouterr().err
    # by path, or by its bare name from anywhere
    assert main(["ingest", str(d), "-o", str(tmp_path / "run"), "--rank", f"{d / 'b.json'}=4"]) == 0
    assert main(["ingest", str(d), "-o", str(tmp_path / "run2"), "--rank", "b.json=4"]) == 0
    assert tracekit.open(tmp_path / "run2").ranks == [0, 4]
    # an entry that matches no input is an error, not silently ignored
    assert main(["ingest", str(d), "-o", str(tmp_path / "run3"), "--rank", "c.json=4"]) == 3
    assert "no input is c.json" in capsys.readouterr().err


def test_a_single_trace_without_a_rank_is_rank_0(tmp_path):
    write_trace(tmp_path / "trace.json", [ev("k", 1)])
    run = tracekit.ingest([tmp_path / "trace.json"], tmp_path / "run", jobs=1)
    assert run.sql("SELECT rank, rank_source FROM traces").to_pylist() == [{"rank": 0, "rank_source": "single file"}]


def test_several_profiling_cycles(tmp_path, capsys):
    for it in (4, 6):
        for r in (0, 1):
            (tmp_path / "p" / f"iteration_{it}").mkdir(parents=True, exist_ok=True)
            write_trace(tmp_path / "p" / f"iteration_{it}" / f"rank{r}_trace.json.gz", [ev("k", it)], header=dist(r))
    assert main(["ingest", str(tmp_path / "p"), "-o", str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err
    assert "2 profiling cycles: iteration_4 (2 files), iteration_6 (2 files)" in err and "--iteration N" in err
    assert main(["ingest", str(tmp_path / "p"), "-o", str(tmp_path / "run"), "--iteration", "6"]) == 0
    run = tracekit.open(tmp_path / "run")
    assert run.sql("SELECT DISTINCT ts_ns FROM events").to_pylist() == [{"ts_ns": 6000}]


def test_open_a_trace_directory_uses_a_cache(two_ranks, tmp_path, monkeypatch):
    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "cache"))
    r1 = tracekit.open(two_ranks)
    r2 = tracekit.open(two_ranks)
    assert r1.version == r2.version and r1.version.startswith(str(tmp_path / "cache"))
    assert r1.ranks == [0, 1]


@pytest.mark.slow
def test_output_formats(two_ranks, tmp_path):
    tracekit.ingest([two_ranks], tmp_path / "run", jobs=1)
    q = "SELECT rank, name FROM events ORDER BY rank, ts_ns LIMIT 2"
    assert tk("sql", tmp_path / "run", q, "--format", "csv").stdout == "rank,name\n0,k\n0,ncclKernel_AllReduce\n"
    md = tk("sql", tmp_path / "run", q, "--format", "markdown").stdout
    assert md.splitlines()[0] == "| rank | name |"
    out = tmp_path / "x.parquet"
    assert tk("sql", tmp_path / "run", q, "--format", "parquet", "-o", out).returncode == 0
    import pyarrow.parquet as pq
    assert pq.read_table(out).num_rows == 2


@pytest.mark.slow
def test_schema_lists_every_column_with_meaning(two_ranks, tmp_path):
    tracekit.ingest([two_ranks], tmp_path / "run", jobs=1)
    rows = json.loads(tk("schema", tmp_path / "run", "--format", "json").stdout)
    objects = {r["object"] for r in rows}
    assert {"events", "traces", "process_groups", "flows", "thread_names", "counters"} <= objects
    assert all(r["meaning"] and r["type"] != "?" for r in rows)
    run = tracekit.open(tmp_path / "run")
    for obj in objects:
        actual = {c for (c,) in run.con.execute(f"SELECT column_name FROM (DESCRIBE {obj})").fetchall()}
        assert actual == {r["column"] for r in rows if r["object"] == obj}, obj


def test_every_report_column_is_documented(two_ranks, tmp_path):
    from tracekit.reports import REGISTRY
    run = tracekit.ingest([two_ranks], tmp_path / "run", jobs=1)
    for rep in REGISTRY.values():
        documented = [c for c, _ in rep.sql.columns]
        assert tracekit.report(run, rep.name).column_names == documented, rep.name
        assert all(m for _, m in rep.sql.columns)


def test_reference_doc_is_current():
    import pathlib

    from tracekit.docgen import render
    doc = pathlib.Path(__file__).resolve().parents[2] / "docs" / "reference.md"
    assert doc.read_text() == render(), "run: python -m tracekit.docgen > docs/reference.md"


def test_every_command_has_an_example_in_its_help():
    from tracekit.cli.main import COMMANDS
    for cmd in COMMANDS:
        assert "Example:" in (cmd.help or ""), cmd.name


def test_never_replaces_a_directory_that_is_not_a_run(two_ranks, tmp_path, capsys):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    assert main(["ingest", str(two_ranks), "-o", str(precious)]) == 1
    assert "is not a tracekit run" in capsys.readouterr().err
    assert (precious / "notes.txt").read_text() == "keep me"


def test_type_error_names_the_event_from_the_cli(tmp_path, capsys):
    evs = [{"ph": "X", "name": "ok", "ts": i, "pid": 1, "tid": 1} for i in range(50)]
    evs[41]["ts"] = "soon"
    t = write_trace(tmp_path / "rank0.json", evs)
    assert main(["ingest", str(t), "-o", str(tmp_path / "run"), "--jobs", "2"]) == 2
    err = capsys.readouterr().err
    assert "event #41 of traceEvents" in err and "'ts' should be a number" in err and "Traceback" not in err


def test_a_path_that_names_nothing_exits_as_the_report_of_one_does(tmp_path, capsys):
    """Ingest of a path that names nothing exited 1, a report of one 2 (click's code for an argument it
    refuses, as for a file that is not a trace): both 2 now, each in one line naming the path."""
    missing = tmp_path / "nothing"
    assert main(["report", str(missing), "summary"]) == 2
    assert str(missing) in capsys.readouterr().err
    assert main(["ingest", str(missing), "-o", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert f"{missing}: no such file or directory" in err and err.count("\n") == 1
    assert main(["ingest", str(tmp_path / "no*.json"), "-o", str(tmp_path / "run")]) == 2  # a glob of nothing
    assert not (tmp_path / "run").exists()
