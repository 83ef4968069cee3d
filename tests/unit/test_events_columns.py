"""An events file holds only the columns its rows gave a value (issue 39, a cheaper map: 26 of the 51
columns were NULL throughout on df_index_resolver, and writing them cost 0.33 s); every reader still sees
the whole events schema. The expected values here are the traces' own JSON, written by the tests."""

import json
import os

import pyarrow.parquet as pq
import pytest

import tracekit
import tracekit.pack_events
from tests.conftest import live, write_trace
from tracekit.cli.main import main
from tracekit.ingestion.one_file import ROW_GROUP_ROWS, ingest_file, read_parts
from tracekit.run_tables import EVENT_COLUMNS
from tracekit.store import Run

SCHEMA = [n for n, _, _ in EVENT_COLUMNS]


def plain(i):  # a CPU op: ph, cat, name, pid, tid, ts, dur and nothing else
    return {"ph": "X", "cat": "cpu_op", "name": f"op{i % 7}", "pid": 1, "tid": 2, "ts": i, "dur": 1}


def kernel(i):  # a kernel with one arg: stream
    return {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": i, "dur": 1, "args": {"stream": 7}}


def columns_of(paths) -> list[set[str]]:
    return [set(pq.read_schema(p).names) for p in paths]


def test_a_column_null_in_every_row_is_not_written(tmp_path):
    src = write_trace(tmp_path / "t.json", [plain(i) for i in range(10)])
    res = ingest_file(str(src), str(tmp_path / "part.parquet"), rank=0)
    # the columns of the keys the events wrote (ts and dur in ns), and the event's position
    assert columns_of(res.parts) == [{"event_index", "ph", "cat", "name", "pid", "tid", "ts_ns", "dur_ns"}]
    t = read_parts(res.parts)
    assert t.column_names == SCHEMA
    assert t.column("name").to_pylist() == [f"op{i % 7}" for i in range(10)]
    assert t.column("stream").null_count == 10 and t.column("args").null_count == 10


@pytest.mark.parametrize("threads", [1, 2])
def test_a_column_met_later_goes_on_in_a_file_that_has_it(tmp_path, threads):
    n = 2 * ROW_GROUP_ROWS
    events = [plain(i) for i in range(n)] + [kernel(n + i) for i in range(n)]
    src = write_trace(tmp_path / "t.json", events)
    res = ingest_file(str(src), str(tmp_path / "part.parquet"), rank=0, threads=threads)
    cols = columns_of(res.parts)
    if threads == 1:  # the file before the column and the one after it
        assert len(res.parts) == 2 and {"stream", "args"} & cols[0] == set()
    # with two writers, a writer opening its first file takes the columns the other has met so far (fewer files):
    # whether the first file lacks the kernel's columns is a race between the writers (seen in CI), so only the
    # rows read back are checked there
    assert any({"stream", "args"} <= c for c in cols)
    t = read_parts(res.parts).sort_by("event_index")
    assert t.column("event_index").to_pylist() == list(range(2 * n))
    assert t.column("stream").to_pylist() == [None] * n + [7] * n
    assert t.column("args").to_pylist() == [None] * n + [json.dumps({"stream": 7})] * n
    assert t.column("cat").to_pylist() == ["cpu_op"] * n + ["kernel"] * n


def test_a_trace_of_no_events_has_one_file_of_the_whole_schema(tmp_path):
    src = write_trace(tmp_path / "t.json", [])
    res = ingest_file(str(src), str(tmp_path / "part.parquet"), rank=0)
    assert len(res.parts) == 1 and pq.read_schema(res.parts[0]).names == SCHEMA


@pytest.mark.parametrize("packed", [False, True])
def test_ranks_whose_files_differ_in_columns_read_as_one_schema(tmp_path, monkeypatch, packed):
    if packed:  # (packing forced on two ranks: tests/sql/test_packed_events.py)
        monkeypatch.setattr(tracekit.pack_events, "PACK_MIN_RANKS", 2)
    d = tmp_path / "traces"
    d.mkdir()
    write_trace(d / "rank0.json", [plain(i) for i in range(5)], header={"distributedInfo": {"rank": 0}})
    write_trace(d / "rank1.json", [kernel(i) for i in range(3)], header={"distributedInfo": {"rank": 1}})
    run = tmp_path / "run"
    tracekit.ingest([str(d)], str(run))
    assert ("packed" in os.listdir(live(run) / "events")) == packed
    store = Run(str(run))
    cur = store.execute("SELECT * FROM events ORDER BY rank, event_index")
    assert [c[0] for c in cur.description] == ["rank", *SCHEMA]
    rows = [dict(zip(["rank", *SCHEMA], r, strict=True)) for r in cur.fetchall()]
    assert [(r["rank"], r["cat"], r["stream"]) for r in rows] == [(0, "cpu_op", None)] * 5 + [(1, "kernel", 7)] * 3
    # one rank's events alone (what derive and the timeline read), and the timeline of both
    assert store.execute("SELECT count(stream) FROM events WHERE rank = 0").fetchall() == [(0,)]
    out = tmp_path / "timeline.json"
    assert main(["timeline", str(run), "-o", str(out)]) == 0
    names = sorted({e["name"] for e in json.loads(out.read_text())["traceEvents"] if e.get("ph") == "X"})
    assert names == ["k", "op0", "op1", "op2", "op3", "op4"]
