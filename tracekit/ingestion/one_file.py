"""Ingest one trace file: stream its events into one Parquet file and describe the trace in a dict."""

from __future__ import annotations

import collections
import gc
import os
import queue
import threading

import msgspec
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..discover import resolve_rank
from .columns import to_record_batch
from .reader import CHUNK_BYTES, TraceReader
from .schema import EVENTS_SCHEMA

_DONE = object()


def _writer_thread(path: str, q: "queue.Queue", errors: list):
    """Write RecordBatches from a queue; pyarrow releases the GIL so this overlaps with decoding."""
    try:
        with pq.ParquetWriter(path, EVENTS_SCHEMA, compression="zstd") as writer:
            while True:
                item = q.get()
                if item is _DONE:
                    return
                writer.write_batch(item)
    except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread
        errors.append(exc)
        while q.get() is not _DONE:
            pass


def ingest_file(path: str, part_path: str, rank: int | None = None, progress=None,
                chunk_bytes: int = CHUNK_BYTES, single: bool = False) -> dict:
    """Write ``part_path`` (Parquet, events schema without rank) and return the trace's description.

    ``progress(json_bytes, events)`` is called after every batch with the increments.
    """
    reader = TraceReader(path, chunk_bytes=chunk_bytes)
    phases: collections.Counter = collections.Counter()
    q: queue.Queue = queue.Queue(maxsize=2)
    errors: list = []
    t = threading.Thread(target=_writer_thread, args=(part_path, q, errors), daemon=True)
    t.start()
    last_bytes = 0
    gc_was_enabled = gc.isenabled()
    gc.disable()  # millions of short-lived tuples/lists, no cycles: the collector only costs time here
    try:
        for batch in reader:
            rb = to_record_batch(batch, path)
            for item in pc.value_counts(rb.column("ph")).to_pylist():
                phases[item["values"]] += item["counts"]
            if errors:
                break
            q.put(rb)
            if progress is not None:
                progress(reader.source.json_bytes - last_bytes, rb.num_rows)
                last_bytes = reader.source.json_bytes
    finally:
        q.put(_DONE)
        t.join()
        if gc_was_enabled:
            gc.enable()
    if errors:
        raise errors[0]
    if progress is not None:
        progress(reader.source.json_bytes - last_bytes, 0)
    header = reader.header
    rank_value, rank_source = resolve_rank(path, header, rank, single)
    return describe(path, header, reader, rank_value, rank_source, dict(phases))


def describe(path, header: dict, reader: TraceReader, rank: int, rank_source: str, phases: dict) -> dict:
    info = header.get("distributedInfo") if isinstance(header.get("distributedInfo"), dict) else {}
    devices = header.get("deviceProperties") or []
    host = header.get("host_name") or header.get("hostname") or header.get("hostName")
    base = header.get("baseTimeNanoseconds")
    pgs = []
    for pg in info.get("pg_config") or []:
        if not isinstance(pg, dict):
            continue
        ranks = pg.get("ranks")
        pgs.append({
            "rank": rank,
            "pg_name": None if pg.get("pg_name") is None else str(pg.get("pg_name")),
            "pg_desc": pg.get("pg_desc"),
            "backend_config": pg.get("backend_config"),
            "pg_size": pg.get("pg_size") if isinstance(pg.get("pg_size"), int) else None,
            "ranks": [r for r in ranks if isinstance(r, int)] if isinstance(ranks, list) else None,
        })
    trace = {
        "rank": rank,
        "rank_source": rank_source,
        "world_size": info.get("world_size") if isinstance(info.get("world_size"), int) else None,
        "backend": info.get("backend"),
        "nccl_version": None if info.get("nccl_version") is None else str(info.get("nccl_version")),
        "host_name": None if host is None else str(host),
        "path": os.path.abspath(path),
        "file_bytes": reader.source.file_bytes,
        "json_bytes": reader.source.json_bytes,
        "sha256": reader.sha256,
        "event_count": reader.event_count,
        "phase_counts": msgspec.json.encode(dict(sorted(phases.items(), key=lambda kv: str(kv[0])))).decode(),
        "schema_version": header.get("schemaVersion") if isinstance(header.get("schemaVersion"), int) else None,
        "base_time_ns": base if isinstance(base, int) else None,
        "display_time_unit": header.get("displayTimeUnit"),
        "device_properties": msgspec.json.encode(devices).decode(),
        "gpu_name": devices[0].get("name") if devices and isinstance(devices[0], dict) else None,
        "metadata": msgspec.json.encode(header).decode(),
    }
    return {"trace": trace, "process_groups": pgs}
