"""The streaming reader on small hand-made traces: cuts, exactness, and errors that name the place."""

import gzip
import json

import pytest

from tests.conftest import write_trace
from tracekit.errors import TraceFormatError
from tracekit.ingestion.columns import to_record_batch
from tracekit.ingestion.reader import TraceReader


def read_all(path, chunk_bytes=1 << 20):
    r = TraceReader(str(path), chunk_bytes=chunk_bytes)
    rows = []
    for b in r:
        rows += to_record_batch(b, str(path)).to_pylist()
    return r, rows


def tricky_events(n=200):
    evs = []
    for i in range(n):
        evs.append({"ph": "X", "cat": "cpu_op", "name": 'op},{"x":1}] {' + str(i), "pid": 1, "tid": 2,
                    "ts": 1000 + i + 0.125, "dur": 3.5,
                    "args": {"External id": i, "nested": [{"a": {"b": []}}, {"c": "}, {"}],
                             "Input Dims": [[1, 2], []]}})
    return evs


@pytest.mark.parametrize("chunk", [16, 64, 333, 1 << 20])
@pytest.mark.parametrize("indent", [None, 2])
def test_cuts_never_split_an_event(tmp_path, chunk, indent):
    evs = tricky_events()
    p = write_trace(tmp_path / "t.json", evs, tail={"baseTimeNanoseconds": 5}, indent=indent)
    r, rows = read_all(p, chunk)
    assert [x["name"] for x in rows] == [e["name"] for e in evs]
    assert [x["external_id"] for x in rows] == list(range(200))
    assert [json.loads(x["args"]) for x in rows] == [e["args"] for e in evs]
    assert rows[3]["input_dims"] == "[[1, 2], []]" or json.loads(rows[3]["input_dims"]) == [[1, 2], []]
    assert r.header == {"schemaVersion": 1, "baseTimeNanoseconds": 5}
    assert r.event_count == 200


def test_times_exact_to_the_nanosecond(tmp_path):
    text = (b'{"traceEvents": [{"ph":"X","name":"a","ts":1712195495519689.047,"dur":0.0015,"pid":1,"tid":1},'
            b'{"ph":"X","name":"b","ts":1669783687464181,"dur":45,"pid":1,"tid":1},'
            b'{"ph":"X","name":"c","ts":12.5000000000000001,"dur":1e3,"pid":1,"tid":1},'
            b'{"ph":"i","name":"d","ts":-3.25,"s":"t","pid":"Spans","tid":"PyTorch Profiler"}]}')
    p = tmp_path / "t.json"
    p.write_bytes(text)
    _, rows = read_all(p)
    assert [r["ts_ns"] for r in rows] == [1712195495519689047, 1669783687464181000, 12500, -3250]
    assert [r["dur_ns"] for r in rows] == [2, 45000, 1000000, None]  # 1.5 ns rounds half to even
    assert (rows[3]["pid"], rows[3]["pid_text"], rows[3]["tid_text"], rows[3]["scope"]) == \
        (None, "Spans", "PyTorch Profiler", "t")


def test_unknown_top_level_keys_kept_in_extra(tmp_path):
    p = write_trace(tmp_path / "t.json", [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "pid": 1, "tid": 1,
                                          "cname": "good", "tts": 7}, {"ph": "M", "name": "n"}])
    _, rows = read_all(p)
    assert json.loads(rows[0]["extra"]) == {"cname": "good", "tts": 7}
    assert rows[1]["extra"] is None and rows[1]["ts_ns"] is None


def test_empty_event_array(tmp_path):
    p = write_trace(tmp_path / "t.json", [], tail={"baseTimeNanoseconds": 1})
    r, rows = read_all(p)
    assert rows == [] and r.header["baseTimeNanoseconds"] == 1


def _err(path, chunk=1 << 20):
    with pytest.raises(TraceFormatError) as ei:
        read_all(path, chunk)
    return str(ei.value)


def test_truncated_gzip(tmp_path):
    full = write_trace(tmp_path / "ok.json.gz", tricky_events(2000))
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(full.read_bytes()[: len(full.read_bytes()) // 2])
    msg = _err(cut)
    assert "cut.json.gz" in msg and "gzip stream is truncated at byte" in msg and msg.endswith("Re-copy the file.")
    assert "--on-error" not in msg  # (ingest adds it where other files exist: tests/cli/test_messages.py)


def test_truncated_json(tmp_path):
    full = write_trace(tmp_path / "ok.json", tricky_events(50)).read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(full[: len(full) - 300])
    msg = _err(cut, chunk=512)
    assert "cut.json" in msg and "truncated" in msg and "byte" in msg


def test_malformed_json_names_byte_offset(tmp_path):
    good = json.dumps({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "pid": 1, "tid": 1}] * 3})
    bad = good.replace('"name": "a", "ts": 1', '"name": "a" "ts": 1', 2)
    p = tmp_path / "bad.json"
    p.write_text(bad)
    msg = _err(p)
    offset = bad.index('"name": "a" "ts"') + len('"name": "a" ')
    assert "malformed JSON" in msg and f"byte {offset:,}" in msg


def test_not_a_trace(tmp_path):
    p = tmp_path / "list.json"
    p.write_text("[1, 2, 3]")
    assert "this JSON array holds no event objects" in _err(p)  # array-format traces are accepted: not this one
    p = tmp_path / "config.json"
    p.write_text('{"lr": 0.1, "events": []}')
    assert 'no "traceEvents" array' in _err(p)
    p = tmp_path / "empty.json"
    p.write_text("")
    assert "empty" in _err(p)


@pytest.mark.parametrize("event, where", [
    ({"ph": 5, "name": "a"}, "'ph' should be a string"),
    ({"ph": "X", "name": "a", "ts": "soon"}, "'ts' should be a number"),
    ({"ph": "X", "name": "a", "ts": 1, "args": {"External id": "abc"}}, "args['External id']"),
    ({"name": "a", "ts": 1}, "no 'ph'"),
])
def test_wrong_types_name_the_event(tmp_path, event, where):
    evs = [{"ph": "X", "name": "ok", "ts": 1, "pid": 1, "tid": 1}] * 7 + [event]
    p = write_trace(tmp_path / "t.json", evs)
    msg = _err(p)
    assert "event #7 of traceEvents" in msg and where in msg


def test_plain_file_with_gz_content(tmp_path):
    p = tmp_path / "actually_gzip.json"
    p.write_bytes(gzip.compress(json.dumps({"traceEvents": [{"ph": "i", "name": "a", "ts": 1}]}).encode()))
    _, rows = read_all(p)
    assert rows[0]["name"] == "a"


def test_absurd_time_is_an_input_error(tmp_path):
    p = tmp_path / "t.json"
    p.write_bytes(b'{"traceEvents": [{"ph":"X","name":"a","ts":1,"pid":1,"tid":1},'
                  b'{"ph":"X","name":"b","ts":1e400,"pid":1,"tid":1}]}')
    msg = _err(p)
    assert "event #1 of traceEvents" in msg and "'ts'" in msg


def test_chrome_json_array_format_with_and_without_closing_bracket(tmp_path):
    evs = [{"ph": "X", "name": f"e{i}", "ts": i, "dur": 1, "pid": 1, "tid": 1} for i in range(100)]
    text = json.dumps(evs, indent=1)
    for name, body in (("closed.json", text), ("open.json", text.rstrip().rstrip("]").rstrip() + ",\n")):
        p = tmp_path / name
        p.write_text(body)
        r, rows = read_all(p, chunk_bytes=300)
        assert [x["name"] for x in rows] == [f"e{i}" for i in range(100)] and r.header == {}, name
    p = tmp_path / "extra.json"
    p.write_text(text + ' {"more": 1}')
    assert "unexpected text after the event array" in _err(p)
    p = tmp_path / "empty.json"
    p.write_text("[]")
    assert read_all(p)[1] == []
