"""Mutations of real traces and the one rule every outcome must follow: an exact ingest, checked event
by event against an independent Decimal JSON parse, or a one-line TracekitError that names the file.
Shared by tests/cli/test_fuzz.py (hypothesis, a few dozen cases) and benchmarks/fuzz.py (minutes)."""

from __future__ import annotations

import gzip
import json
import pathlib
from decimal import ROUND_HALF_EVEN, Decimal

import tracekit
from tracekit.errors import TracekitError

INSERTS = [b"},{", b'"', b"[", b"]", b"{", b"}", b",", b"\xff", b"\\", b"1e400", b'"\xc3"', b"null",
           str(2**70).encode(), b'"zz":"},{",', b"[" * 2000, b" " * 5000]


def mutate(text: bytes, kind: str, at: float, pick: int) -> bytes:
    """One mutation at relative position ``at`` (0..1): truncate, flip a byte, insert a token, delete or
    duplicate a slice."""
    if not text:  # an earlier mutation left nothing: only an insert can change that
        return INSERTS[pick % len(INSERTS)] if kind == "insert" else text
    i = min(len(text) - 1, max(0, int(at * len(text))))
    if kind == "truncate":
        return text[:i]
    if kind == "flip":
        return text[:i] + bytes([text[i] ^ (1 << (pick % 8))]) + text[i + 1:]
    if kind == "insert":
        return text[:i] + INSERTS[pick % len(INSERTS)] + text[i:]
    if kind == "delete":
        return text[:i] + text[i + 1 + pick % 64:]
    if kind == "duplicate":
        return text[:i] + text[i:i + 1 + pick % 512] + text[i:]
    raise ValueError(kind)


def reference_events(data: bytes):
    """The events as an independent parser reads them (json with Decimal numbers), or None when the
    text is not one JSON object with a traceEvents list."""
    try:
        doc = json.loads(data.decode("utf-8"), parse_float=Decimal)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return None
    return doc["traceEvents"]


def _ns(v):
    if v is None:
        return None
    return int((Decimal(v) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def check(data: bytes, workdir: pathlib.Path, gz: bool = False) -> str:
    """Ingest ``data`` and check the rule; returns 'exact' or 'error'. Raises AssertionError otherwise."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / ("rank0_trace.json.gz" if gz else "rank0_trace.json")
    path.write_bytes(gzip.compress(data, 1) if gz else data)
    try:
        run = tracekit.ingest([path], workdir / "run", jobs=1, force=True)
    except TracekitError as exc:
        msg = str(exc)
        assert str(path) in msg, f"the error does not name the file: {msg}"
        assert "\n" not in msg.strip(), f"not one line: {msg}"
        return "error"
    got = run.sql("SELECT event_index, ph, name, ts_ns, dur_ns FROM events ORDER BY event_index").to_pylist()
    run.close()
    ref = reference_events(data)
    assert ref is not None, "ingested a file that is not one JSON object with traceEvents"
    assert len(got) == len(ref), (len(got), len(ref))
    for g, e in zip(got, ref, strict=True):
        assert g["ph"] == e.get("ph") and g["name"] == e.get("name"), (g, e)
        for col, key in (("ts_ns", "ts"), ("dur_ns", "dur")):
            v = e.get(key)
            if isinstance(v, (int, Decimal)) and not isinstance(v, bool):
                assert g[col] == _ns(v), (col, g, e)
    return "exact"
