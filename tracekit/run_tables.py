"""The Arrow schemas of a run's stored tables (events, traces, process_groups) and the version a run records.

A run directory records ``SCHEMA_VERSION``; a run of another version is refused when opened (the error says
to ingest its traces again), never misread; an ingest into it rebuilds it. Below ingest, derive, the layout
and the commands alike: each reads these, none of them reaches up into ingestion for them.
"""

from __future__ import annotations

import msgspec
import pyarrow as pa

from .kineto_args import KINETO_ARGS

SCHEMA_VERSION = 2  # 2: traces.host, traces.host_source

_ARG_ARROW = {
    "int": pa.int64(),
    "str": pa.string(),
    "float": pa.float64(),
    "int_or_text": pa.int64(),
    "exact_int": pa.string(),
    "json": pa.string(),
    "text": pa.string(),
}

# (name, type, meaning with unit) for every column of `events`, in order.
EVENT_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("event_index", pa.int64(), "position of the event in the file's traceEvents array (0-based)"),
    ("ph", pa.string(), "Chrome trace phase: X complete, i instant, s/f flow start/end, M metadata, C counter"),
    ("cat", pa.string(), "category: cpu_op, kernel, cuda_runtime, gpu_memcpy, ac2g, python_function, ..."),
    ("name", pa.string(), "event name (operator, kernel, runtime call, ...)"),
    ("pid", pa.int64(), "process id as written; for GPU events the device index. NULL when not an integer"),
    ("tid", pa.int64(), "thread id as written; for GPU events the stream. NULL when not an integer"),
    ("pid_text", pa.string(), "pid when the trace wrote a string (e.g. 'Spans'), else NULL"),
    ("tid_text", pa.string(), "tid when the trace wrote a string, else NULL"),
    ("ts_ns", pa.int64(), "start time, ns, exactly as written (ts in us x 1000, rounded to the ns), trace clock"),
    ("dur_ns", pa.int64(), "duration, ns (dur in us x 1000); NULL for events without dur"),
    ("flow_id", pa.int64(), "flow id ('id') of s/f events when an integer"),
    ("flow_id_text", pa.string(), "flow id when the trace wrote a string"),
    ("bp", pa.string(), "flow binding point ('e' = enclosing slice)"),
    ("scope", pa.string(), "instant event scope ('s' key: g, p or t)"),
]
EVENT_COLUMNS += [(col, _ARG_ARROW[kind], f"args['{key}']: {meaning}") for col, key, kind, meaning in KINETO_ARGS]
EVENT_COLUMNS += [
    ("args", pa.string(), "every arg of the event, verbatim JSON text as in the file (NULL if no args)"),
    ("extra", pa.string(), "top-level keys other than the standard ones, as a JSON object text (else NULL)"),
]
EVENTS_SCHEMA = pa.schema([pa.field(n, t) for n, t, _ in EVENT_COLUMNS])

TRACE_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("rank", pa.int64(), "global rank of the trace (distributedInfo.rank, else the file name)"),
    ("rank_source", pa.string(), "where the rank came from: distributedInfo, file name or option"),
    ("world_size", pa.int64(), "distributedInfo.world_size"),
    ("backend", pa.string(), "distributedInfo.backend (nccl, gloo, ...)"),
    ("nccl_version", pa.string(), "distributedInfo.nccl_version when present"),
    ("host_name", pa.string(), "host name from the trace metadata when present"),
    ("host", pa.string(), "the host the rank ran on (see host_source; NULL when nothing tells)"),
    ("host_source", pa.string(), "how the host is known: --hosts, tracekit.profiler, trace metadata, file name, "
                                 "assumed (GPUs per host from deviceProperties, consecutive ranks) or unknown"),
    ("path", pa.string(), "absolute path of the input file"),
    ("file_bytes", pa.int64(), "size of the input file on disk, bytes"),
    ("json_bytes", pa.int64(), "size of the (decompressed) JSON text, bytes"),
    ("sha256", pa.string(), "SHA-256 of the input file"),
    ("event_count", pa.int64(), "number of traceEvents"),
    ("phase_counts", pa.string(), "JSON object: events per ph"),
    ("schema_version", pa.int64(), "the trace's own schemaVersion"),
    ("base_time_ns", pa.int64(), "baseTimeNanoseconds when present, ns since the epoch"),
    ("display_time_unit", pa.string(), "displayTimeUnit when present"),
    ("device_properties", pa.string(), "deviceProperties, JSON text"),
    ("gpu_name", pa.string(), "name of the first device in deviceProperties"),
    ("metadata", pa.string(), "every top-level key other than traceEvents, JSON text"),
]
TRACES_SCHEMA = pa.schema([pa.field(n, t) for n, t, _ in TRACE_COLUMNS])

PG_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("rank", pa.int64(), "rank whose trace listed the group"),
    ("pg_name", pa.string(), "process group name (pg_config.pg_name)"),
    ("pg_desc", pa.string(), "process group description (default_pg, TP, DP, ...)"),
    ("backend_config", pa.string(), "pg_config.backend_config"),
    ("pg_size", pa.int64(), "number of ranks in the group"),
    ("ranks", pa.list_(pa.int64()), "global ranks of the group"),
]
PG_SCHEMA = pa.schema([pa.field(n, t) for n, t, _ in PG_COLUMNS])


def write_run_table(table: pa.Table, path: str) -> None:
    """The traces or process_groups table written as Parquet, each text column dictionary-encoded but the
    trace headers (traces.metadata: a long JSON text a rank, each one distinct), zstd-compressed. Written
    with pyarrow's defaults, the headers' column was a failed dictionary, then plain: at 4,096 ranks (88 MB of
    headers) pyarrow read a group's file back in 0.46 s where it now takes 0.04 to 0.1 s, written in half the
    time; its size is a third."""
    import pyarrow.parquet as pq

    pq.write_table(table, path, compression="zstd",
                   use_dictionary=[n for n in table.column_names if n != "metadata"])


def rows_table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    """A few Python rows (the traces and process_groups tables) as a Table of ``schema``. Read as JSON
    lines by Arrow: pa.Table.from_pylist (like any pa.array of Python objects) imports pandas when it is
    installed, 0.15 s of every ingest process spent on a library it never uses."""
    import pyarrow.json as pa_json

    if not rows:
        return pa.Table.from_batches([], schema=schema)  # (schema.empty_table() imports pandas too)
    text = b"\n".join(msgspec.json.encode(row) for row in rows)
    # one block for the whole text: a row longer than a block (Arrow's default, 1 MB: a trace with 2 MB of
    # metadata, or 20,000 process groups) would straddle two and fail (the reader caps a header at 256 MB)
    block = max(1 << 20, len(text) + 1)
    return pa_json.read_json(pa.py_buffer(text), read_options=pa_json.ReadOptions(use_threads=False, block_size=block),
                             parse_options=pa_json.ParseOptions(explicit_schema=schema,
                                                                unexpected_field_behavior="error")).select(schema.names)
