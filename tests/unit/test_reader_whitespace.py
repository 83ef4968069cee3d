"""Whitespace before the trace object, before the first event and after the last (issue 29, item 5): skipped
in time linear in its length and held to the per-event cap, like an event or the gap between two."""

import gzip

import pytest

from tracekit.errors import TraceFormatError
from tracekit.ingestion import reader as reader_mod
from tracekit.ingestion.reader import TraceReader

EV = b'{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2}'
MB = 1 << 20


def trace(tmp_path, before_obj=0, before_ev=0, between=0):
    p = tmp_path / "t.json.gz"
    with gzip.open(p, "wb", compresslevel=1) as f:
        f.write(b" " * before_obj + b'{"traceEvents":[' + b"\n" * before_ev + EV + b"," + b"\t" * between + EV + b"]}")
    return str(p)


def read(path, **kw):
    r = TraceReader(path, chunk_bytes=64 << 10, max_event_bytes=MB, **kw)
    n = sum(1 for _ in r)
    return r, n


@pytest.mark.parametrize("frame", [False, True])
@pytest.mark.parametrize("where", ["before_obj", "before_ev", "between"])
def test_whitespace_past_the_cap_is_refused(tmp_path, where, frame):
    path = trace(tmp_path, **{where: 3 * MB})
    with pytest.raises(TraceFormatError) as exc:
        read(path, frame=frame)
    msg = str(exc.value)
    assert msg.startswith(path) and "1 MB" in msg and "TRACEKIT_MAX_EVENT_MB" in msg


@pytest.mark.parametrize("where", ["before_obj", "before_ev", "between"])
def test_whitespace_under_the_cap_is_read(tmp_path, where):
    r, _ = read(trace(tmp_path, **{where: MB // 2}))
    assert r.event_count == 2


def test_skipping_is_linear(tmp_path, monkeypatch):
    """Count the bytes the whitespace skip looks at: about the whitespace's length, not once per read of
    everything read so far (which made 256 MB of spaces take 24-50 s, and 4 GB hours)."""
    looked = [0]
    inner = reader_mod._skip_ws

    def counting(buf, i):
        j = inner(buf, i)
        looked[0] += j - i
        return j

    monkeypatch.setattr(reader_mod, "_skip_ws", counting)
    space = MB - 100
    path = trace(tmp_path, before_obj=space, before_ev=space)
    r, _ = read(path)
    assert r.event_count == 2
    assert looked[0] <= 2 * space + 1000  # each space byte looked at once (64 KB reads: 16 per MB)


def test_a_header_past_its_cap_has_its_own_error(tmp_path, monkeypatch):
    """The metadata before traceEvents is read whatever its size up to a stated cap (256 MB; 1 MB here),
    and past it the error says so (it said the file had no traceEvents array)."""
    monkeypatch.setattr(reader_mod, "_MAX_HEADER", MB)
    p = tmp_path / "t.json"
    p.write_bytes(b'{"blob":"' + b"x" * (2 * MB) + b'","traceEvents":[' + EV + b"]}")
    with pytest.raises(TraceFormatError) as exc:
        read(str(p))
    assert str(exc.value) == (f'{p}: more than 1 MB of JSON before the "traceEvents" array: the top-level metadata '
                              "of a trace is a few KB, so the file is damaged or not a trace")
    monkeypatch.setattr(reader_mod, "_MAX_HEADER", 4 * MB)
    assert read(str(p))[0].header == {"blob": "x" * (2 * MB)}
