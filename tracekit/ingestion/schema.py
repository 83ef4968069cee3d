"""The msgspec types that decode one trace event, and how the events Parquet is written (the tables'
Arrow schemas are tracekit/run_tables.py)."""

from __future__ import annotations

from decimal import Decimal
from typing import Optional, Union

import msgspec
import pyarrow as pa

from ..kineto_args import KINETO_ARGS

_ARG_TYPES = {
    "int": Optional[int],
    "str": Optional[str],
    "float": Optional[Union[int, float]],
    "int_or_text": Optional[Union[int, str]],
    "exact_int": Optional[int],
    "json": msgspec.Raw,
    "text": msgspec.Raw,
}

# One struct for the known args; unknown keys are ignored here (they stay in the verbatim `args`).
KinetoArgs = msgspec.defstruct(
    "KinetoArgs",
    [(col, _ARG_TYPES[kind], msgspec.field(default=None, name=key)) for col, key, kind, _ in KINETO_ARGS],
    gc=False,  # scalars only: no cycles, and millions of them should not wake the collector
)

class TraceEvent(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """One element of ``traceEvents`` as written; numbers kept exact (Decimal), args kept raw."""

    ph: Optional[str] = None
    cat: Optional[str] = None
    name: Optional[str] = None
    pid: Optional[Union[int, str]] = None
    tid: Optional[Union[int, str]] = None
    ts: Optional[Decimal] = None
    dur: Optional[Decimal] = None
    id: Optional[Union[int, str]] = None
    bp: Optional[str] = None
    s: Optional[str] = None
    args: msgspec.Raw = None  # type: ignore[assignment]  (absent -> None, JSON null -> Raw(b"null"))


# How the events Parquet is written (the writer is the slowest stage of the ingest pipeline). Dictionary
# encoding only where values repeat: names, categories, ids of processes, threads, streams and groups.
# The JSON-text columns and the per-event numbers (times, indexes, correlation ids) differ in nearly every
# row: a dictionary for them is built and thrown away per row group (10 % of the write time, and the
# plain-encoded file is a third smaller). The JSON-text columns get no min/max statistics: they prune
# nothing.
_FREE_TEXT = {"args", "extra", "input_dims", "input_type", "in_split_size", "out_split_size", "pg_ranks", "comms_id"}
_REPEATING_INTS = {"pid", "tid", "stream", "device", "context", "group_size", "fwd_thread_id", "sort_index",
                   "src_rank", "dst_rank", "comm_rank", "pg_id", "global_rank_start", "global_rank_stride"}


def parquet_options(schema: pa.Schema) -> dict:
    """The ParquetWriter options of an events file of ``schema`` (the events columns it holds: a column
    NULL in every row is not written, ingestion/one_file.py)."""
    return {
        "compression": "zstd",
        "use_dictionary": [f.name for f in schema
                           if (pa.types.is_string(f.type) and f.name not in _FREE_TEXT) or f.name in _REPEATING_INTS],
        "write_statistics": [f.name for f in schema if f.name not in _FREE_TEXT],
    }
