"""Issue 29, item 7: a big header ingests; names from the file system reach the terminal escaped; an
error that --on-error skip would pass says so, and its skip line names the file once; a finish that runs
out of memory names the input file and its largest event, not the hidden version being built."""

import json

import duckdb

import tracekit
from tests.conftest import dist, write_trace
from tracekit.cli.main import main

EV = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"stream": 7}}


def test_two_mb_of_metadata_ingests(tmp_path, capsys):
    (tmp_path / "t").mkdir()
    """Each trace's metadata is one row of JSON text; past Arrow's 1 MB block it failed: 'internal error:
    ArrowInvalid: straddling object'."""
    blob = "x" * 2_000_000
    for r in (0, 1):
        write_trace(tmp_path / "t" / f"rank{r}.json", [EV], header={**dist(r), "blob": blob})
    assert main(["ingest", str(tmp_path / "t"), "-o", str(tmp_path / "run")]) == 0, capsys.readouterr().err
    rows = tracekit.open(tmp_path / "run").sql("SELECT metadata FROM traces ORDER BY rank").to_pylist()
    assert [json.loads(r["metadata"])["blob"] for r in rows] == [blob, blob]


def test_twenty_thousand_process_groups_ingest(tmp_path, capsys):
    pgs = [{"pg_name": str(i), "pg_desc": "g", "backend_config": "cuda:nccl", "pg_size": 2, "ranks": [0, 1]}
           for i in range(20_000)]
    (tmp_path / "t").mkdir()
    for r in (0, 1):
        write_trace(tmp_path / "t" / f"rank{r}.json", [EV], header=dist(r, pg_config=pgs))
    assert main(["ingest", str(tmp_path / "t"), "-o", str(tmp_path / "run")]) == 0, capsys.readouterr().err
    got = tracekit.open(tmp_path / "run").sql("SELECT count(*) AS n, count(DISTINCT pg_name) AS names, "
                                              "min(pg_size) AS lo, max(pg_size) AS hi FROM process_groups")
    assert got.to_pylist() == [{"n": 40_000, "names": 20_000, "lo": 2, "hi": 2}]


def test_a_file_name_reaches_the_terminal_escaped(tmp_path, capsys):
    bad = tmp_path / "t" / "bad\x1b[31mred\nline.json"
    bad.parent.mkdir()
    bad.write_text("{not json")
    shown = str(bad).replace("\x1b", "\\x1b").replace("\n", "\\n")
    assert main(["ingest", str(bad), "-o", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and err.count("\n") == 1 and err.startswith(f"error: {shown}: ")
    write_trace(tmp_path / "t" / "rank0.json", [EV], header=dist(0, world=1))
    assert main(["ingest", str(tmp_path / "t"), "-o", str(tmp_path / "run"), "--on-error", "skip"]) == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err and err.count("\n") == 1
    assert err.startswith(f"skipped {shown}: ") and err.count("bad\\x1b") == 1  # the path once


def test_a_stray_json_among_traces_names_on_error_skip(tmp_path, capsys):
    (tmp_path / "t").mkdir()
    for r in (0, 1):
        write_trace(tmp_path / "t" / f"rank{r}.json", [EV], header=dist(r))
    (tmp_path / "t" / "config.json").write_text(json.dumps({"model": "x"}))
    assert main(["ingest", str(tmp_path / "t"), "-o", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path / 't' / 'config.json'}: this JSON has no \"traceEvents\" array")
    skip = ("; or leave this file out: `tracekit ingest TRACES --on-error skip -o RUN` ingests the others, then name "
            "RUN instead of the traces\n")
    assert err.endswith(skip)
    # a command given the traces says the same: it has no --on-error of its own ('No such option')
    assert main(["report", str(tmp_path / "t"), "summary"]) == 2
    assert capsys.readouterr().err.endswith(skip)
    assert main(["ingest", str(tmp_path / "t"), "-o", str(tmp_path / "run"), "--on-error", "skip"]) == 0
    err = capsys.readouterr().err
    assert err.count(str(tmp_path / "t" / "config.json")) == 1  # it printed the path twice


def test_a_finish_out_of_memory_names_the_input_and_event(tmp_path, capsys):
    """The rule's error as the finish raises it for an event that lists 3 MB of ranks (the memory itself is
    not exhausted here: the error DuckDB gives is handed to the message). It named the hidden version
    being built and advised --rederive, for a run that was never made."""
    from tracekit.derive import _finish_fail
    ranks = "[" + ",".join(map(str, range(500_000))) + "]"
    big = dict(EV, args={"stream": 7, "Collective name": "allreduce", "Process Group Ranks": ranks})
    write_trace(tmp_path / "rank0.json", [EV, big, EV], header=dist(0, world=1))
    run = tmp_path / "run"
    assert main(["ingest", str(tmp_path / "rank0.json"), "-o", str(run)]) == 0
    oom = duckdb.OutOfMemoryException("Out of Memory Error: could not allocate block of size 21.8 MiB")
    from tracekit.layout.versions import current_version
    msg = str(_finish_fail(current_version(str(run)), 0, 0)("step_breakdown", oom))  # (the version derive builds)
    assert msg.startswith(f"{tmp_path / 'rank0.json'}: could not derive its step_breakdown (rank 0): Out of Memory")
    assert f"its largest event is event #1 of traceEvents ({2 * len(ranks) / 2**20:,.1f} MB of text)" in msg
    assert "--rederive" not in msg and "set it higher and run the same command again" in msg
