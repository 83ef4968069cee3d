"""The compiled fast path (tracekit/ingestion/_fastscan.c) against the Python path: on every input it
either declines (the Python path then decodes it) or gives exactly the Python path's columns. Expected
values of the crafted cases are written out by hand (JSON's rules, round half to even at the ns); the
Python path is the second, independent implementation everything else is checked against."""

import collections
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import all_shared_files, require, write_trace
from tracekit.errors import TraceFormatError
from tracekit.ingestion import fast
from tracekit.ingestion.columns import to_record_batch
from tracekit.ingestion.one_file import ingest_file, read_parts
from tracekit.ingestion.reader import EventBatch, _events_decoder
from tracekit.kineto_args import KINETO_ARGS


@pytest.fixture(autouse=True)
def _needs_fast_path():
    require(fast._fastscan is not None, "the C fast path is not built (no C compiler at install time)",
            "`pip install -e .` needs a C compiler and Python's headers")


def python_batch(text: bytes):
    """The Python path on framed events: a RecordBatch, or the exception it raises."""
    try:
        return to_record_batch(EventBatch(0, _events_decoder.decode(b"[" + text + b"]"), None), "t.json")
    except Exception as exc:  # noqa: BLE001 - what it refuses is part of the comparison
        return exc


def fast_batch(text: bytes):
    res = fast.scan(text)
    if res is None:
        return None
    batch = fast.to_record_batch(res[0], res[1], 0)
    assert res[2] == collections.Counter(batch.column("ph").to_pylist())  # the phase counts it returns
    return batch


def same_or_declined(text: bytes):
    """The fast path's batch (checked equal to the Python path's, column by column), or None if it declined."""
    f = fast_batch(text)
    if f is None:
        return None
    p = python_batch(text)
    assert not isinstance(p, Exception), f"the fast path accepted what the Python path refuses ({p}): {text[:200]!r}"
    f.validate(full=True)
    for name in p.schema.names:
        assert f.column(name).equals(p.column(name)), \
            (name, f.column(name).to_pylist()[:5], p.column(name).to_pylist()[:5])
    return f


def one(event_text: str) -> dict:
    batch = same_or_declined(event_text.encode())
    assert batch is not None, f"declined: {event_text}"
    (row,) = batch.to_pylist()
    return row


def test_strings_with_every_escape():
    row = one(r'{"ph": "X", "name": "a\"b\\c\/d\u00e9\ud83d\ude00\n\t\b\f\r\u0000z", "cat": "caf\u00e9"}')
    assert row["name"] == 'a"b\\c/d\u00e9\U0001F600\n\t\b\f\r\x00z'
    assert row["cat"] == "caf\u00e9"


@pytest.mark.parametrize("ts, ns", [("0.0005", 0), ("0.0015", 2), ("0.0025", 2), ("-0.0015", -2), ("1.00050001", 1001),
                                    ("12.5000000000001", 12500), ("123456789012.123456789", 123456789012123),
                                    ("7", 7000), ("-0", 0), ("0.999", 999), ("9.9995", 10000)])
def test_times_round_half_to_even_at_the_nanosecond(ts, ns):
    assert one(f'{{"ph": "X", "ts": {ts}, "dur": {ts}}}')["ts_ns"] == ns


def test_args_by_kind():
    row = one('{"ph": "X", "args": {"Comms Id": 1180591620717411303424, "stream": "7", "External id": -3, '
              '"In split size": [1, 2], "Process Group Ranks": "[0, 1]", "Input Dims": [[1, 2],  []], '
              '"Input type": null, "dtype": "Float", "unknown": {"deep": [{"}": "]"}]}}}')
    assert row["comms_id"] == "1180591620717411303424"  # 2**70, exact digits
    assert row["stream"] == 7 and row["external_id"] == -3
    assert row["in_split_size"] == "[1, 2]" and row["pg_ranks"] == "[0, 1]"
    assert row["input_dims"] == "[[1, 2],  []]" and row["input_type"] == "null"  # JSON text as written
    assert row["dtype"] == "Float"
    assert row["args"].startswith('{"Comms Id": 1180591620717411303424') and row["args"].endswith('"]"}]}}')


def test_ids_as_numbers_or_text_and_absent_keys():
    row = one('{"ph": "i", "pid": "Spans", "tid": 12, "id": "0x1f", "s": "g"}')
    assert (row["pid"], row["pid_text"], row["tid"], row["tid_text"]) == (None, "Spans", 12, None)
    assert (row["flow_id"], row["flow_id_text"], row["scope"]) == (None, "0x1f", "g")
    assert row["args"] is None and row["ts_ns"] is None and row["dur_ns"] is None
    assert one('{"ph": "X", "args": null}')["args"] is None


DECLINED = [
    '{"ph": "X", "tts": 5}',  # a non-standard key: the Python path keeps it in `extra`
    '{"ph": "X", "pid": 1.5}', '{"ph": "X", "ts": 1e3}', '{"ph": "X", "ts": "12"}', '{"ph": "X", "ts": true}',
    '{"ph": "X", "args": {"External id": 18446744073709551616}}', '{"ph": "X", "pid": -9223372036854775808}',
    '{"ph": "X", "ph": "B"}', '{"ph": "X", "args": {"stream": 1, "stream": 2}}',
    '{"ph": "X", "args": {"stream": " 12"}}',
    '{"ph": "X", "args": {"stream": "1_000"}}', '{"ph": "X", "args": {"stream": "\\u0031"}}',
    '{"ph": "X", "name": "\\ud800"}', '{"ph": "X", "name": "\\udc00x"}', '{"n\\u0061me": "a", "ph": "X"}',
    '{"ph": "X"},', '{"name": "no phase"}', '[1]', '{"ph": "X", "args": [1]}', '{"ph": "X", "args": {"dtype": 5}}',
    '{"ph": "X", "name": "tab\tinside"}', '{"ph": "X", "ts": 01}', '{"ph": "X", "ts": 1.}', '{"ph": "X", "ts": .5}',
    '{"ph": "X", "args": {"x": ' + "[" * 600 + "]" * 600 + "}}", '{"ph": "X", "dur": 99999999999999999999}',
    '{"ph": "X", "args": {"Comms Id": -0}}', '{"ph": "X"} {"ph": "X"}', '{"ph": "X", "args": {"x": tru}}',
]


@pytest.mark.parametrize("text", DECLINED)
def test_declines_what_it_cannot_decode_exactly(text):
    assert fast.scan(text.encode()) is None


def test_docs_count_the_declined_inputs():
    import pathlib
    import re
    doc = (pathlib.Path(__file__).parents[2] / "docs" / "ingest.md").read_text()
    (n,) = re.findall(r"(\d+) inputs it\s+must decline", doc)
    assert int(n) == len(DECLINED)


@pytest.mark.parametrize("stream", ["0x0", "abc", "12 streams", "x"])
def test_an_int_or_text_arg_with_a_letter_is_null(stream):
    # Python's int() refuses any string with an ASCII letter: NULL, the text stays in args (ROCm writes "0x0")
    row = one(f'{{"ph": "X", "args": {{"stream": "{stream}"}}}}')
    assert row["stream"] is None and json.loads(row["args"]) == {"stream": stream}


def test_declines_invalid_utf8():
    assert fast.scan(b'{"ph": "X", "name": "\xff"}') is None
    assert fast.scan(b'{"ph": "X", "args": {"x": "\xc0\xaf"}}') is None  # overlong


_KEYS = [key for _, key, _, _ in KINETO_ARGS] + ["other", "nested"]
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2 ** 70), 2 ** 70), st.integers(-10 ** 6, 10 ** 6),
                     st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
                     st.from_regex(r"-?[0-9]{1,20}", fullmatch=True))
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=6)
_times = st.one_of(st.none(), st.integers(-10 ** 12, 10 ** 12), st.floats(-1e15, 1e15),
                   st.decimals(-10 ** 12, 10 ** 12, places=6, allow_nan=False, allow_infinity=False))
_event = st.fixed_dictionaries(
    {"ph": st.sampled_from(["X", "i", "M", "s", "f", "C"])},
    optional={"name": st.one_of(st.text(max_size=12), st.none(), st.integers()), "cat": st.text(max_size=6),
              "pid": st.one_of(st.integers(-(2 ** 64), 2 ** 64), st.text(max_size=4)), "tid": st.integers(-5, 10 ** 6),
              "ts": _times, "dur": _times, "id": st.one_of(st.integers(0, 2 ** 40), st.text(max_size=4)),
              "args": st.one_of(st.none(), st.dictionaries(st.sampled_from(_KEYS), _values, max_size=6)),
              "tts": st.integers()})


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_event, min_size=1, max_size=6), st.booleans(), st.sampled_from([None, 0, 2]))
def test_random_events_same_or_declined(events, ensure_ascii, indent):
    text = json.dumps(events, ensure_ascii=ensure_ascii, indent=indent,
                      default=lambda d: float(d))[1:-1].strip().encode()
    same_or_declined(text)


def _ingest_both(path, tmp_path, chunk_bytes=1 << 20, scanned=None):
    fast_part, pure_part = tmp_path / "fast.parquet", tmp_path / "pure.parquet"
    before = fast.stats()
    res_fast = ingest_file(str(path), str(fast_part), rank=0, chunk_bytes=chunk_bytes, threads=2)
    if scanned is not None:  # what the C scanner did on the fast ingest
        scanned.update({k: v - before[k] for k, v in fast.stats().items()})
    old = os.environ.get("TRACEKIT_PURE_PYTHON")
    os.environ["TRACEKIT_PURE_PYTHON"] = "1"
    try:
        res_pure = ingest_file(str(path), str(pure_part), rank=0, chunk_bytes=chunk_bytes)
    finally:
        if old is None:
            del os.environ["TRACEKIT_PURE_PYTHON"]
        else:
            os.environ["TRACEKIT_PURE_PYTHON"] = old
    # two cores: two writers take row groups in turn (two files); event_index puts them back in order
    # (a file holds the columns its rows gave a value: read_parts gives the whole schema)
    fast_table = read_parts(res_fast.parts).sort_by("event_index")
    assert res_pure.parts[0] == str(pure_part)  # (one writer: its later files, if any, beside it)
    pure_table = read_parts(res_pure.parts)
    res_fast.parts = res_pure.parts = []  # the rest of each result compares whole
    return res_fast, res_pure, fast_table.combine_chunks(), pure_table.combine_chunks()


@pytest.mark.slow
@pytest.mark.parametrize("path", all_shared_files())
def test_every_shared_trace_ingests_the_same_either_way(path, tmp_path):
    scanned: dict = {}
    res_fast, res_pure, a, b = _ingest_both(path, tmp_path, scanned=scanned)
    assert res_fast == res_pure
    assert a.num_rows == res_pure.trace["event_count"]
    assert a.equals(b)
    # these are profilers' own files: the compiled scanner declines none of their chunks and decodes
    # every event (a scanner that declined everything would pass the comparison above)
    assert scanned["declined"] == 0 and scanned["chunks"] > 0
    assert scanned["events"] == res_pure.trace["event_count"]


def test_a_failed_configure_keeps_the_table_in_use():
    from tracekit.ingestion import _fastscan
    text = b'{"ph": "X", "args": {"External id": 5, "stream": "7"}}'
    before = fast_batch(text).to_pylist()
    assert before[0]["external_id"] == 5 and before[0]["stream"] == 7
    keys = [key.encode() for _, key, _, _ in KINETO_ARGS]
    kinds = [fast._KIND_CODES[k] for _, _, k, _ in KINETO_ARGS]
    for bad_keys, bad_kinds, error in (
            (keys[:3] + [keys[0]], kinds[:4], ValueError),  # a key twice
            (keys[:3] + ["not bytes"], kinds[:4], TypeError),  # fails after three keys were made
            (keys[:2], [0, 99], ValueError),  # no such kind
            (keys[:1] + [b""], kinds[:2], ValueError),
            ([], [], ValueError)):
        with pytest.raises(error):
            _fastscan.configure(bad_keys, bad_kinds)
        assert fast_batch(text).to_pylist() == before  # the old table, whole
    fixed = 13  # ph, cat, name, pid, tid, pid_text, tid_text, ts, dur, id, id_text, bp, s
    assert len(_fastscan.scan(text)[1]) == fixed + len(keys) + 1  # + the args text
    _fastscan.configure(keys[:1], kinds[:1])  # a call that succeeds replaces it
    try:
        n, cols, _ = _fastscan.scan(text)
        assert n == 1 and len(cols) == fixed + 1 + 1
        assert bytes(cols[fixed][1])[:8] == (5).to_bytes(8, "little", signed=True)  # External id, int64
    finally:
        _fastscan.configure(keys, kinds)
    assert fast_batch(text).to_pylist() == before


def test_a_declined_chunk_mid_file_keeps_order_and_extra_keys(tmp_path):
    events = [{"ph": "X", "name": f"op{i}", "ts": i + 0.5, "dur": 1, "pid": 1, "tid": 1, "args": {"External id": i}}
              for i in range(3000)]
    events[1700]["tts"] = 17  # a non-standard key: that chunk goes through the Python path
    events[2500]["args"]["stream"] = "+5"  # declined by C (Python's int() reads it): 5 on the Python path
    p = write_trace(tmp_path / "t.json", events, indent=1)
    scanned: dict = {}
    _, _, a, b = _ingest_both(p, tmp_path, chunk_bytes=20_000, scanned=scanned)
    assert scanned["declined"] == 2  # the two chunks (of about 130 events each) that hold those events
    assert a.equals(b)
    assert a.column("stream").to_pylist()[2500] == 5
    assert a.column("event_index").to_pylist() == list(range(3000))
    assert a.column("name").to_pylist() == [e["name"] for e in events]
    assert a.column("extra").to_pylist()[1700] == '{"tts":17}'


@pytest.mark.parametrize("damage", [b'"name": "op12', b'"ts": 12.5.5', b'"ph": 5, "x'])
def test_damaged_files_fail_with_the_python_paths_message(tmp_path, damage):
    events = [{"ph": "X", "name": f"op{i}", "ts": i, "pid": 1, "tid": 1} for i in range(2000)]
    text = json.dumps({"traceEvents": events}).encode().replace(b'"name": "op1200"', damage, 1)
    p = tmp_path / "bad.json"
    p.write_bytes(text)
    messages = []
    for pure in ("0", "1"):
        os.environ["TRACEKIT_PURE_PYTHON"] = pure
        try:
            with pytest.raises(TraceFormatError) as info:
                ingest_file(str(p), str(tmp_path / f"{pure}.parquet"), rank=0, chunk_bytes=4096, threads=2)
            messages.append(str(info.value))
        finally:
            del os.environ["TRACEKIT_PURE_PYTHON"]
    assert messages[0] == messages[1]
    assert str(p) in messages[0]
