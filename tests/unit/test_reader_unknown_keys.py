"""Events with non-standard top-level keys: exact numbers for every event of the batch, the unknown
keys kept byte for byte, and no internal error whatever their values hold."""


import pytest

import tracekit
from tracekit.cli.main import main


def write(path, text: str):
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def events_text(extra_key_value: str) -> str:
    evs = [
        '{"ph":"X","cat":"kernel","name":"a","pid":0,"tid":7,"ts":1712195495519689.047,"dur":1.001}',
        '{"ph":"X","cat":"kernel","name":"b","pid":0,"tid":7,"ts":1712195495519690.123,"dur":2.10,'
        f'"zz":{extra_key_value}}}',
        '{"ph":"X","cat":"kernel","name":"c","pid":0,"tid":7,"ts":1712195495519691.999,"dur":0.5}',
    ]
    return '{"schemaVersion":1,"traceEvents":[' + ",".join(evs) + "]}"


@pytest.mark.parametrize("value", ['"},{"', '[{"x":1.10},{}]', '1.10', '{"deep":{"a":"}]"}}'])
def test_unknown_key_costs_no_exactness(tmp_path, value):
    f = write(tmp_path / "rank0.json", events_text(value))
    run = tracekit.ingest([f], tmp_path / "run", jobs=1)
    got = run.sql("SELECT name, ts_ns, dur_ns, extra FROM events ORDER BY event_index").to_pylist()
    assert [(r["name"], r["ts_ns"], r["dur_ns"]) for r in got] == [
        ("a", 1712195495519689047, 1001), ("b", 1712195495519690123, 2100), ("c", 1712195495519691999, 500)]
    assert got[1]["extra"] == '{"zz":' + value + "}"  # verbatim: 1.10 stays 1.10
    assert got[0]["extra"] is None and got[2]["extra"] is None


def test_invalid_utf8_in_an_unknown_key_is_an_input_error(tmp_path, capsys):
    f = write(tmp_path / "rank0.json", events_text('"\\u00e9 ok"').encode().replace(b"\\u00e9 ok", b"\xff"))
    assert main(["ingest", str(f), "-o", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "event #1" in err and "UTF-8" in err and "internal error" not in err
