"""Turn one batch of decoded events into an Arrow RecordBatch of the ``events`` schema.

Column-at-a-time list comprehensions feed pyarrow; no per-event branching beyond type splits.
Times are exact: ``ts``/``dur`` arrive as Decimal (msgspec keeps the digits as written), go to
Arrow decimal128, are rounded to 3 decimals (nanoseconds) and their unscaled integers read as int64.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

import msgspec
import numpy as np
import pyarrow as pa
from msgspec.structs import astuple

from ..errors import TraceFormatError
from ..kineto_args import KINETO_ARGS
from ..run_tables import EVENTS_SCHEMA
from .batch import EventBatch, type_error
from .schema import KinetoArgs, TraceEvent

_args_decoder = msgspec.json.Decoder(list[KinetoArgs])
_EMPTY = b"{}"
_NS = Decimal("0.001")
_INT64_MAX = (1 << 63) - 1


def raw_to_strings(raws: list) -> pa.Array:
    """msgspec.Raw (or None) values -> a string array of their JSON text, built from one buffer."""
    n = len(raws)
    nulls = raws.count(None)
    if nulls == n:
        return pa.nulls(n, pa.string())
    mask = None
    if nulls:
        mask = pa.array([r is not None for r in raws]).buffers()[1]
        raws = [b"" if r is None else r for r in raws]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, raws), dtype=np.int64, count=n), out=offsets[1:])
    data = b"".join(raws)
    return pa.Array.from_buffers(pa.large_string(), n, [mask, pa.py_buffer(offsets), pa.py_buffer(data)],
                                 null_count=nulls).cast(pa.string())


def _to_ns(values: list, what: str, path: str, start: int) -> pa.Array:
    """Exact Decimal microseconds -> int64 nanoseconds (round half to even at the nanosecond)."""
    try:
        dec = pa.array(values, pa.decimal128(38, 9))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        # more than 9 decimals (e.g. re-saved floats like 12.5000000000001) or an exponent: quantize first
        dec = pa.array([None if v is None else _quantize(v, what, path, start + i) for i, v in enumerate(values)],
                       pa.decimal128(38, 3))
    import pyarrow.compute as pc  # here, not at the top: the fast path never needs it (20 ms of import)

    ns = pc.round(dec, 3, round_mode="half_to_even").cast(pa.decimal128(38, 3))
    words = np.frombuffer(ns.buffers()[1], dtype=np.int64)[2 * ns.offset: 2 * (ns.offset + len(ns))]
    lo, hi = words[0::2], words[1::2]
    if not np.array_equal(hi, lo >> 63):
        bad = int(np.nonzero(hi != (lo >> 63))[0][0])
        raise TraceFormatError(f"{path} (event #{start + bad} of traceEvents): '{what}' = {values[bad]} us "
                               "does not fit in int64 nanoseconds; is the time unit right?")
    return pa.Array.from_buffers(pa.int64(), len(ns), [ns.buffers()[0], pa.py_buffer(np.ascontiguousarray(lo))])


def _quantize(v: Decimal, what: str, path: str, index: int) -> Decimal:
    try:
        q = v.quantize(_NS, rounding=ROUND_HALF_EVEN)
        if q.is_finite() and abs(q) < Decimal(10) ** 16:
            return q
    except ArithmeticError:
        pass
    raise TraceFormatError(f"{path} (event #{index} of traceEvents): '{what}' = {v} us is not a usable time "
                           "(it must be a finite number of microseconds below 1e16). Fix or drop that event")


def _int_or_text(values: list) -> tuple[pa.Array, pa.Array]:
    """A column that holds ints (the usual) and sometimes strings -> (int64, text-or-null)."""
    try:
        return pa.array(values, pa.int64()), pa.nulls(len(values), pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        ints = [v if type(v) is int and -_INT64_MAX <= v <= _INT64_MAX else None for v in values]
        # a string, or an integer past 64 bits: its exact text
        texts = [None if v is None or (type(v) is int and -_INT64_MAX <= v <= _INT64_MAX) else str(v) for v in values]
        return pa.array(ints, pa.int64()), pa.array(texts, pa.string())


def _as_int(v):
    if type(v) is int:
        return v if -_INT64_MAX <= v <= _INT64_MAX else None
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            return None
    return None


def _text(r):
    if r is None:
        return None
    b = bytes(r)
    return msgspec.json.decode(b) if b[:1] == b'"' else b.decode()


def _arg_column(vals: list, col: str, kind: str, key: str, path: str, start: int) -> pa.Array:
    if vals.count(None) == len(vals):
        return pa.nulls(len(vals), EVENTS_SCHEMA.field(col).type)
    if kind in ("int", "float", "str"):
        try:
            return pa.array(vals, EVENTS_SCHEMA.field(col).type)
        except OverflowError:
            i = next(i for i, v in enumerate(vals) if type(v) is int and not -_INT64_MAX <= v <= _INT64_MAX)
            raise TraceFormatError(f"{path} (event #{start + i} of traceEvents): args['{key}'] = {vals[i]} does "
                                   "not fit in 64 bits; fix or drop that event") from None
    if kind == "int_or_text":
        try:
            return pa.array(vals, pa.int64())
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return pa.array([_as_int(v) for v in vals], pa.int64())
    if kind == "exact_int":
        return pa.array([None if v is None else str(v) for v in vals], pa.string())
    if kind == "json":
        return raw_to_strings(vals)
    return pa.array([None if v is None else _text(v) for v in vals], pa.string())  # text


def _utf8(raw) -> bool:
    try:
        bytes(raw).decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _bad_args(raw_args: list, path: str, start: int, exc: Exception) -> TraceFormatError:
    for i, a in enumerate(raw_args):
        if a is None:
            continue
        try:
            msgspec.json.decode(bytes(a), type=KinetoArgs)
        except RecursionError:
            return TraceFormatError(f"{path} (event #{start + i} of traceEvents): its args nest deeper than the "
                                    "JSON decoder allows (about 1,000 levels); fix or drop that event")
        except msgspec.DecodeError as one:
            return TraceFormatError(f"{path} (event #{start + i} of traceEvents): unreadable args: "
                                    f"{str(one).split(' (byte')[0]}; fix or drop that event")
        except msgspec.ValidationError:
            continue
    return TraceFormatError(f"{path} (events from #{start} of traceEvents): unreadable args: {exc}")


def to_record_batch(batch: EventBatch, path: str) -> pa.RecordBatch:
    evs = batch.events
    n = len(evs)
    start = batch.start
    ph_, cat_, name_, pid_, tid_, ts_, dur_, id_, bp_, s_, args_ = (
        zip(*map(astuple, evs), strict=True) if n else [()] * len(TraceEvent.__struct_fields__))
    phs = list(ph_)
    if None in phs:
        i = phs.index(None)
        raise TraceFormatError(f"{path} (event #{start + i} of traceEvents): the event has no 'ph' (phase) key; "
                               "every Chrome trace event needs one. Fix or drop that event")
    pid, pid_text = _int_or_text(list(pid_))
    tid, tid_text = _int_or_text(list(tid_))
    flow_id, flow_text = _int_or_text(list(id_))
    raw_args = [None if a is None or (len(a) == 4 and bytes(a) == b"null") else a for a in args_]
    try:
        args = _args_decoder.decode(b"[" + b",".join([_EMPTY if a is None else a for a in raw_args]) + b"]")
    except msgspec.ValidationError as exc:
        raise type_error(path, start, str(exc), args=True) from None
    except (msgspec.DecodeError, RecursionError) as exc:  # invalid UTF-8 in a typed arg, deep nesting: find the event
        raise _bad_args(raw_args, path, start, exc) from None
    cols = {
        "event_index": pa.Array.from_buffers(pa.int64(), n,
                                             [None, pa.py_buffer(np.arange(start, start + n, dtype=np.int64))]),
        "ph": pa.array(phs, pa.string()),
        "cat": pa.array(cat_, pa.string()),
        "name": pa.array(name_, pa.string()),
        "pid": pid, "tid": tid, "pid_text": pid_text, "tid_text": tid_text,
        "ts_ns": _to_ns(list(ts_), "ts", path, start),
        "dur_ns": _to_ns(list(dur_), "dur", path, start),
        "flow_id": flow_id, "flow_id_text": flow_text,
        "bp": pa.array(bp_, pa.string()),
        "scope": pa.array(s_, pa.string()),
    }
    # transpose structs -> columns in C: one astuple per event, then zip(*)
    by_col = list(zip(*map(astuple, args), strict=True)) if n else [()] * len(KINETO_ARGS)
    for (col, key, kind, _), vals in zip(KINETO_ARGS, by_col, strict=True):
        cols[col] = _arg_column(list(vals), col, kind, key, path, start)
    cols["args"] = raw_to_strings(raw_args)
    try:  # args are kept as written: text that is not UTF-8 would break every later read of the run
        cols["args"].validate(full=True)
    except pa.ArrowInvalid:
        bad = next(i for i, a in enumerate(raw_args) if a is not None and not _utf8(a))
        raise TraceFormatError(f"{path} (event #{start + bad} of traceEvents): its args hold text that is not "
                               "valid UTF-8; fix or drop that event") from None
    cols["extra"] = pa.array(batch.extra if batch.extra is not None else [None] * n, pa.string())
    return pa.RecordBatch.from_arrays([cols[f.name] for f in EVENTS_SCHEMA], schema=EVENTS_SCHEMA)
