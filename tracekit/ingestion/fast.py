"""The compiled fast path of ingest (``_fastscan.c``): frame the event array and build Arrow columns in C.

It decodes the common case exactly as the Python path does (columns.py) and declines everything else,
which the Python path then decodes or reports. It is optional: without a C compiler at install time,
or with ``TRACEKIT_PURE_PYTHON=1``, every event goes through Python (same results, slower).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .. import settings
from ..kineto_args import KINETO_ARGS
from ..run_tables import EVENTS_SCHEMA

try:
    from . import _fastscan
except ImportError:  # built without a C compiler
    _fastscan = None

_KIND_CODES = {"int": 0, "str": 1, "float": 2, "int_or_text": 3, "exact_int": 4, "json": 5, "text": 6}
if _fastscan is not None:
    _fastscan.configure([key.encode() for _, key, _, _ in KINETO_ARGS], [_KIND_CODES[k] for _, _, k, _ in KINETO_ARGS])

# the columns scan() returns, in order: every column of `events` but event_index (first) and extra (last)
_SCANNED = [f for f in EVENTS_SCHEMA if f.name not in ("event_index", "extra")]


def enabled() -> bool:
    """True when the compiled fast path is built and not switched off ($TRACEKIT_PURE_PYTHON=1)."""
    return _fastscan is not None and not settings.pure_python()


def stats() -> dict:
    """What the compiled scanner did in this process: {"chunks": scanned, "declined": of them (the Python
    path decoded those), "events": accepted}."""
    return _fastscan.stats()


def frame(buf, pos: int):
    """The latest event boundary after ``buf[pos]``: (cut, next, is_end, events before it) or None."""
    return _fastscan.frame(buf, pos)


def scan(data: bytes):
    """Framed events (``ev, ev, ...``) -> (rows, [Arrow arrays], {ph: events}) or None: the Python path
    decides."""
    res = _fastscan.scan(data)
    if res is None:
        return None
    n, cols, phases = res
    arrays = []
    zeros = None  # one buffer of zeros for every column with no value in this chunk (most args are absent)
    for field, (valid, values, offsets, nulls) in zip(_SCANNED, cols, strict=True):
        if values is None:
            if zeros is None:  # calloc'd: pages the OS maps on first read, never written
                zeros = pa.py_buffer(np.zeros(n + 1, dtype=np.int64))
            bufs = [zeros, zeros] if not pa.types.is_string(field.type) else [zeros, zeros, zeros]
            arrays.append(pa.Array.from_buffers(field.type, n, bufs, null_count=n))
            continue
        bufs = [None if valid is None else pa.py_buffer(valid)]
        if offsets is not None:
            bufs.append(pa.py_buffer(offsets))
        bufs.append(pa.py_buffer(values))
        arrays.append(pa.Array.from_buffers(field.type, n, bufs, null_count=nulls))
    return n, arrays, phases


def to_record_batch(n: int, arrays: list, start: int) -> pa.RecordBatch:
    """scan()'s columns as a RecordBatch of the events schema, its first event #start of the file."""
    index = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(np.arange(start, start + n, dtype=np.int64))])
    cols = [index, *arrays, pa.nulls(n, pa.string())]  # (pa.array on a numpy array would import pandas: 0.15 s)
    return pa.RecordBatch.from_arrays(cols, schema=EVENTS_SCHEMA)
