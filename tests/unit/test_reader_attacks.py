"""Trace shapes that read differently elsewhere, or whose errors named the wrong place (issue 20, item 13).
Each runs on the compiled fast path and on the pure Python one: both must say the same."""

import pytest

from tracekit.cli.main import main

HEAD = '{"schemaVersion":1,"distributedInfo":{"rank":0,"world_size":1},'


def ev(name, extra=""):
    return '{"ph":"X","cat":"kernel","name":"%s","pid":0,"tid":7,"ts":1,"dur":1%s}' % (name, extra)


@pytest.fixture(params=["fast", "pure"])
def path_kind(request, monkeypatch):
    if request.param == "pure":
        monkeypatch.setenv("TRACEKIT_PURE_PYTHON", "1")
    return request.param


def test_two_trace_events_keys_are_refused(tmp_path, capsys, path_kind):
    """JSON.parse (the trace viewers) and Python's json take the last of two keys; a streaming reader
    found the first. The numbers would differ from what the viewer shows: refuse."""
    text = HEAD + '"traceEvents":[' + ev("a") + '],"traceEvents":[' + ev("b") + "," + ev("c") + "]}"
    p = tmp_path / "dup.json"
    p.write_text(text)
    import json
    assert [e["name"] for e in json.loads(text)["traceEvents"]] == ["b", "c"]  # what a viewer shows
    assert main(["ingest", str(p), "-o", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    at = text.index("]", text.index(ev("a"))) + 1  # just after the first array
    assert err == (f'error: {p} (byte {at:,} of the JSON text): the trace object has two "traceEvents" keys: '
                   "trace viewers (JSON.parse) and Python's json take the last one, a streaming reader the first; "
                   "keep one of them\n")
    assert not (tmp_path / "run").exists()


def test_one_trace_events_key_and_one_nested_are_fine(tmp_path, capsys, path_kind):
    text = HEAD[:-1] + ',"x":{"traceEvents":[1]},' + '"traceEvents":[' + ev("a") + '],"y":{"traceEvents":[2]}}'
    p = tmp_path / "ok.json"
    p.write_text(text)
    assert main(["ingest", str(p), "-o", str(tmp_path / "run")]) == 0


@pytest.mark.parametrize("deep_at", [1, 3])
def test_nesting_error_names_the_deep_event(tmp_path, capsys, path_kind, deep_at):
    deep = "[" * 5000 + "]" * 5000
    events = [ev(f"e{i}", ',"args":{"x":%s}' % deep if i == deep_at else "") for i in range(5)]
    text = HEAD + '"traceEvents":[' + ",".join(events) + "]}"
    p = tmp_path / "deep.json"
    p.write_text(text)
    assert main(["ingest", str(p), "-o", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert f"(event #{deep_at} of traceEvents, byte {text.index(events[deep_at]):,} of the JSON text)" in err
    assert "nested deeper than the JSON decoder allows" in err
