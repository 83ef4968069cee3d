"""Output people can read: tables that fit the terminal without breaking a number, reports that say
why they are empty, exact values in csv/json."""

import json

import pytest
from rich.console import Console

import tracekit
from tests.conftest import dist, write_trace
from tests.tracegen import kernel, step
from tracekit.cli.main import main
from tracekit.render import print_rich


@pytest.fixture
def one_rank(tmp_path):
    evs = [step(1, 0, 100)]
    evs += kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 10, 20, launch=(9, 1),
                  **{"Collective name": "allreduce", "In msg nelems": 123457, "Out msg nelems": 123457,
                     "dtype": "Float", "Group size": 1})
    write_trace(tmp_path / "trace.json", evs, header=dist(0, world=1))
    return tracekit.ingest([tmp_path / "trace.json"], tmp_path / "run", jobs=1)


def test_wide_table_in_80_columns_stays_a_table(one_rank, capsys):
    table = tracekit.report(one_rank, "summary")
    print_rich(table, "summary", Console(width=80, force_terminal=False))
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    rows = [line.split() for line in out.splitlines()]
    # headers wrapped at their underscores; one line per rank, every value whole: rank 0, 1 step, window
    # 20 us = 0.020 ms (the one kernel: busy 100 %), comm 0.020 ms, all exposed, overlap 0 %, allreduce
    assert ["rank", "steps", "ms", "pct", "ms", "comm_ms", "pct", "collective"] in rows
    assert ["0", "1", "0.020", "100.000", "0.020", "0.020", "0.000", "allreduce"] in rows
    # the least needed columns (not among the report's first) left out, and said so
    assert ("(2 columns left out to fit 80 characters: collectives, comm_mb; --columns picks columns, "
            "--format csv shows all)") in " ".join(out.split())


def test_csv_and_json_carry_exact_values(one_rank, capsys):
    assert main(["report", one_rank.version, "summary", "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["comm_mb"] == 0.493828 and row["window_ms"] == 0.02
    assert main(["sql", one_rank.version, "SELECT bytes, dur_ns FROM collectives", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ["bytes,dur_ns", "493828,20000"]


def test_one_rank_has_nothing_to_match(one_rank, capsys):
    assert main(["report", one_rank.version, "skew"]) == 0
    captured = capsys.readouterr()
    assert "this run has one rank: there is nothing to match across ranks" in captured.err
    assert "instance_key" not in captured.out  # no empty grid


def test_empty_reports_say_why(tmp_path, capsys):
    write_trace(tmp_path / "t.json", kernel("gemm", 0, 10), header=dist(0, world=1))  # no step, no comm
    run = tracekit.ingest([tmp_path / "t.json"], tmp_path / "run", jobs=1)
    assert main(["report", run.version, "overlap", "--by", "step"]) == 0
    assert "no ProfilerStep" in capsys.readouterr().err
    assert main(["report", run.version, "collectives"]) == 0
    assert "no communication" in capsys.readouterr().err
    # .html: the chart needs only the base install (a .png needs matplotlib, [plot])
    assert main(["plot", run.version, "-o", str(tmp_path / "p.html")]) != 0
    assert "nothing to plot: no collective has a message size" in capsys.readouterr().err
    assert not (tmp_path / "p.html").exists()


def test_schema_in_80_columns_keeps_every_column(one_rank, capsys):
    """The meaning wraps (a long word folds) rather than a column being left out: at 80 characters the type
    was dropped for `schema RUN collectives`, and type and meaning both for the full listing."""
    import pathlib

    from tracekit.commands.schema import schema_table

    # the meaning as the view's SQL documents it (-- @column ts_ns: ...), read from the file itself
    sql = (pathlib.Path(tracekit.__file__).parent / "sql" / "views" / "collectives.sql").read_text()
    (doc,) = [line.split(":", 1)[1].strip() for line in sql.splitlines() if line.startswith("-- @column ts_ns:")]
    for name in ("collectives", None):
        print_rich(schema_table(one_rank, name), None, Console(width=80, force_terminal=False))
        lines = capsys.readouterr().out.splitlines()
        assert max(len(line) for line in lines) <= 80
        assert lines[0].split() == ["object", "column", "type", "meaning"]
        assert not any("left out to fit" in line for line in lines)
        # the ts_ns row: collectives, ts_ns, BIGINT, then its meaning over this line and the ones under it
        i = next(i for i, line in enumerate(lines) if line.split()[:2] == ["collectives", "ts_ns"])
        words = lines[i].split()[3:]
        for line in lines[i + 1:]:
            if not line.startswith(" "):
                break
            words += line.split()
        assert lines[i].split()[2] == "BIGINT" and words == doc.split()


def test_cache_list_in_80_columns_keeps_every_column(tmp_path, monkeypatch, capsys):
    """Paths are words longer than any column at 80 characters: folded, not the columns left out (the
    cache list showed run and inputs only)."""
    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "cache"))
    d = tmp_path / "a-directory-with-a-rather-long-name" / "another-long-directory-name"
    d.mkdir(parents=True)
    write_trace(d / "rank0_trace.json", [step(1, 0, 100)], header=dist(0, world=1))
    tracekit.open(d)  # fills the cache
    print_rich(tracekit.cache_list(), None, Console(width=80, force_terminal=False))
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert lines[0].split() == ["run", "inputs", "first_input", "mb", "last_used"]
    assert not any("left out to fit" in line for line in lines)
    # the path, read down its column (it has no space: each line holds one piece at the column's start)
    start = lines[0].index("first_input")
    assert "".join(line[start:].split()[0] for line in lines[2:] if line[start:].strip()) == str(d / "rank0_trace.json")


def test_report_buckets_apply_to_a_run_and_to_a_path(one_rank):
    """One allreduce of 123,457 float32: 493,828 bytes, in [256 KiB, 512 KiB) by powers of two and in
    [64 KiB, 1 MiB) with the edges 64KiB,1MiB; a Run given keeps its own edges (they were ignored)."""
    def buckets(run, edges):
        return [r["size_bucket"] for r in tracekit.report(run, "collectives", buckets=edges).to_pylist()]

    assert buckets(one_rank, None) == ["256 KiB–512 KiB"]
    assert buckets(one_rank, "64KiB,1MiB") == buckets(one_rank.directory, [65536, 1048576]) == ["64 KiB–1 MiB"]
    assert buckets(one_rank, None) == ["256 KiB–512 KiB"]


def test_advise_note_follows_its_findings_in_one_stream(tmp_path):
    """`tracekit advise RUN 2>&1` (a terminal shows both streams so): the note about the savings (stderr) came
    before the findings it is about (stdout); now after the last one."""
    import subprocess
    import sys

    from tests.graph.test_gpu_bounds import host_bound_job

    run = host_bound_job(tmp_path)
    p = subprocess.run([sys.executable, "-m", "tracekit.cli.main", "advise", run.version], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stdout
    text = p.stdout
    assert text.index("advise — ranked findings") < text.index("host-bound on every rank") \
        < text.index("each saving is the replay as is minus"), text


def test_identifiers_print_without_thousands_separators():
    """A step, a rank or a stream is a name, not a quantity: ProfilerStep#1009 prints as 1009 (as the trace and
    advise write it; it printed 1,009), a quantity keeps its separators (1,234.500 ms; 12,345 events)."""
    import pyarrow as pa

    from tracekit.render import _cells

    t = pa.table({"rank": [3], "step": [1009], "stream": [1234], "timeline_ms": [1234.5], "events": [12345]})
    assert _cells(t) == [["3", "1009", "1234", "1,234.500", "12,345"]]


def test_streamed_markdown_prints_identifiers_as_the_table_does(tmp_path):
    """`--format markdown` writes a query's rows batch by batch (render/stream.py): step 1009 and stream 1234
    print as the trace writes them (they printed 1,009 and 1,234 there while the table printed 1009), a
    quantity keeps its separators (1,234.500 ms; 12,345 events)."""
    import pyarrow as pa

    from tracekit.render.stream import write_batches

    t = pa.table({"rank": [3], "step": [1009], "stream": [1234], "timeline_ms": [1234.5], "events": [12345]})
    out = tmp_path / "t.md"
    assert write_batches(t.schema, t.to_batches(), "markdown", str(out)) == 1
    assert out.read_text().splitlines()[2] == "| 3 | 1009 | 1234 | 1,234.500 | 12,345 |"
