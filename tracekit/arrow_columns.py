"""Arrow columns built from Python values by their buffers: pyarrow's first ``pa.array`` (or ``pa.table``
of Python lists) imports pandas, 0.3 s of a process that never needs it, such as a rank part's writer
joining its group's tables (part_groups.py) right after the job's last step."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def _validity(values: list) -> tuple[pa.Buffer | None, int]:
    """The validity bitmap of ``values`` (None: every value present) and how many are missing."""
    present = np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
    missing = len(values) - int(present.sum())
    return (pa.py_buffer(np.packbits(present, bitorder="little")) if missing else None), missing


def int64_column(values: list[int | None]) -> pa.Array:
    """``values`` as an int64 array, None as null."""
    valid, missing = _validity(values)
    data = np.fromiter((0 if v is None else v for v in values), dtype=np.int64, count=len(values))
    return pa.Array.from_buffers(pa.int64(), len(values), [valid, pa.py_buffer(data)], null_count=missing)


def string_column(values: list[str | None]) -> pa.Array:
    """``values`` as a string array (utf8, 32-bit offsets), None as null."""
    valid, missing = _validity(values)
    encoded = [b"" if v is None else v.encode() for v in values]
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    if offsets[-1] >= 2**31:
        raise ValueError(f"{offsets[-1]} bytes of text: more than a 32-bit offset column holds")
    return pa.Array.from_buffers(pa.string(), len(values),
                                 [valid, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(encoded))],
                                 null_count=missing)


def int64_lists(lists: list[list[int] | None]) -> pa.Array:
    """``lists`` as a list<int64> array (32-bit offsets), None as a null list; the items are never null."""
    valid, missing = _validity(lists)
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum([0 if v is None else len(v) for v in lists], out=offsets[1:])
    if offsets[-1] >= 2**31:
        raise ValueError(f"{offsets[-1]} list items: more than a 32-bit offset column holds")
    items = np.fromiter((x for v in lists if v is not None for x in v), dtype=np.int64, count=int(offsets[-1]))
    child = pa.Array.from_buffers(pa.int64(), len(items), [None, pa.py_buffer(items)])
    return pa.ListArray.from_buffers(pa.list_(pa.int64()), len(lists), [valid, pa.py_buffer(offsets.astype(np.int32))],
                                     null_count=missing, children=[child])
