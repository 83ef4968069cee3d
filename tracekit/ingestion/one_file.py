"""Ingest one trace file: stream its events into one Parquet file and describe the trace in a dict."""

from __future__ import annotations

import collections
import ctypes
import gc
import glob
import os
import queue
import threading
from concurrent.futures import ThreadPoolExecutor

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq

from ..discover import resolve_rank
from ..errors import TraceFormatError
from ..hosts import host_in_trace
from ..run_tables import EVENTS_SCHEMA
from . import fast
from .columns import to_record_batch
from .reader import CHUNK_BYTES, Chunk, TraceReader
from .records import FileResult
from .schema import parquet_options

_DONE = object()


ROW_GROUP_ROWS = 32768  # batches are joined up to this many rows per row group (fewer, larger column chunks)
MAX_WRITERS = 2  # Parquet writers of one file (with two cores or more): its events are at most this many files


def part_paths(part_path: str, writers: int) -> list[str]:
    """The first file of each writer of a trace's events: ``part_path``, then ``NAME.1.parquet``, ... beside
    it (a writer's later files: ``NAME.W-K.parquet``, _writer_thread)."""
    base = part_path[:-len(".parquet")]
    return [part_path] + [f"{base}.{i}.parquet" for i in range(1, writers)]


def written_parts(part_path: str) -> list[str]:
    """Every events file written for ``part_path`` (its writers' files beside it), in name order."""
    base = part_path[:-len(".parquet")]
    found = glob.glob(glob.escape(base) + ".*.parquet")
    return ([part_path] if os.path.exists(part_path) else []) + sorted(found)


def read_parts(paths: list[str]) -> pa.Table:
    """The events of a trace's files (``FileResult.parts``) as one table of the whole events schema, in the
    files' order (a column a file lacks is NULL there)."""
    tables = []
    for p in paths:
        t = pq.read_table(p)
        tables.append(pa.table([t.column(f.name) if f.name in t.column_names else pa.nulls(t.num_rows, f.type)
                                for f in EVENTS_SCHEMA], schema=EVENTS_SCHEMA))
    return pa.concat_tables(tables) if tables else EVENTS_SCHEMA.empty_table()


def _present(table: pa.Table) -> set[int]:
    """The columns of ``table`` with a value in some row."""
    n = table.num_rows
    return {i for i, c in enumerate(table.columns) if c.null_count < n}


def _file_schema(columns: set[int]) -> pa.Schema:
    return pa.schema([EVENTS_SCHEMA.field(i) for i in sorted(columns)])


def _writer_thread(path: str, later: str, q: "queue.Queue", errors: list, written: list, seen: set):
    """Write row groups (Tables) from a queue; pyarrow releases the GIL so this overlaps with decoding.

    A column NULL in every row so far is not written (on a real trace about half the columns are NULL
    throughout: 26 of 51 on df_index_resolver): the file has the columns its rows gave a value. A row group
    with a value in a column the open file lacks closes it, and the rows go on in a new file
    (``later``: NAME.W-K.parquet) with that column too, and those the other writers met (``seen``, shared:
    fewer files). Readers see the whole events schema whatever a file holds
    (layout/bind.py)."""
    writer = None
    columns: set[int] = set()
    try:
        while (table := q.get()) is not _DONE:
            present = _present(table)
            if writer is None or not present <= columns:
                if writer is not None:
                    writer.close()
                    writer = None
                seen |= present
                columns |= seen | {0}
                name = later.format(len(written)) if written else path
                written.append(name)
                schema = _file_schema(columns)
                writer = pq.ParquetWriter(name, schema, **parquet_options(schema))
            writer.write_table(table.select(sorted(columns)), row_group_size=table.num_rows)
        if writer is not None:
            writer.close()
            writer = None
    except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread
        errors.append(exc)
        if writer is not None:
            try:
                writer.close()
            except BaseException:  # noqa: BLE001 - the first error is the one said
                pass
        while q.get() is not _DONE:
            pass


class _Restart(Exception):
    """The fast path met text it cannot frame exactly (only malformed text does that): start the file
    again on the Python path, which reads it as it always has and names what is wrong."""


def ingest_file(path: str, part_path: str, rank: int | None = None, progress=None,
                chunk_bytes: int = CHUNK_BYTES, single: bool = False, threads: int = 1) -> FileResult:
    """Write ``part_path`` (Parquet, events schema without rank; with ``threads`` >= 2 also NAME.1.parquet
    beside it) and return what was read and written (FileResult).

    ``threads``: how many chunks of the file are decoded at once (the C scanner releases the GIL).
    ``progress(json_bytes, events)`` is called after every batch with the increments.
    """
    try:
        return _ingest_file(path, part_path, rank, progress, chunk_bytes, single, threads, frame=True)
    except _Restart:
        return _ingest_file(path, part_path, rank, progress, chunk_bytes, single, threads, frame=False)


def _record_batches(reader: TraceReader, path: str, threads: int):
    """The file's RecordBatches in file order, each with its {ph: events}. Chunks framed in C are scanned by
    a pool of threads, at most ``threads + 1`` in flight (memory stays bounded); the rest goes through the
    Python path."""
    def resolve(item, fut):
        if fut is None:
            return python_batch(item)
        res = fut.result()
        if res is not None and res[0] == item.events:
            return fast.to_record_batch(res[0], res[1], item.start), res[2]
        try:  # declined by the C scanner (an unusual value, a non-standard key, or an error to name)
            batch = reader.decode_chunk(item)
        except TraceFormatError:
            raise _Restart() from None
        if batch is None or len(batch.events) != item.events:
            raise _Restart()
        return python_batch(batch)

    def python_batch(batch):
        return to_record_batch(batch, path), collections.Counter(e.ph for e in batch.events)

    pending: collections.deque = collections.deque()
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        for item in reader:
            pending.append((item, pool.submit(fast.scan, item.text) if isinstance(item, Chunk) else None))
            while len(pending) > max(1, threads) or (pending and pending[0][1] is not None and pending[0][1].done()):
                yield resolve(*pending.popleft())
        while pending:
            yield resolve(*pending.popleft())


def _ingest_file(path, part_path, rank, progress, chunk_bytes, single, threads, frame) -> FileResult:
    reader = TraceReader(path, chunk_bytes=chunk_bytes, frame=frame)
    phases: collections.Counter = collections.Counter()
    # Encoding Parquet is the slowest stage; with two cores or more, two writers take row groups in turn
    # (two files, each in file order; event_index orders the rank's events across them)
    paths = part_paths(part_path, MAX_WRITERS if threads >= 2 else 1)
    queues = [queue.Queue(maxsize=1) for _ in paths]
    errors: list = []
    base = part_path[:-len(".parquet")]
    written: list[list[str]] = [[] for _ in paths]
    seen: set[int] = set()  # the columns with a value so far, in any writer's rows
    writers = [threading.Thread(target=_writer_thread,
                                args=(p, f"{base}.{w}-{{}}.parquet", q, errors, written[w], seen), daemon=True)
               for w, (p, q) in enumerate(zip(paths, queues, strict=True))]
    for t in writers:
        t.start()
    groups = 0
    held: list = []
    held_rows = 0

    def flush():
        nonlocal groups, held, held_rows
        queues[groups % len(queues)].put(pa.Table.from_batches(held, schema=EVENTS_SCHEMA))
        groups += 1
        held, held_rows = [], 0

    last_bytes = 0
    gc_was_enabled = gc.isenabled()
    gc.disable()  # millions of short-lived tuples/lists, no cycles: the collector only costs time here
    batches = _record_batches(reader, path, threads)
    try:
        for rb, counts in batches:
            phases.update(counts)
            if errors:
                break
            held.append(rb)
            held_rows += rb.num_rows
            if held_rows >= ROW_GROUP_ROWS:
                flush()
            if progress is not None:
                progress(reader.source.json_bytes - last_bytes, rb.num_rows)
                last_bytes = reader.source.json_bytes
        if held and not errors:
            flush()
    finally:
        # closed here, not when garbage collected: an error kept alive (in a traceback, a test's record)
        # would otherwise keep the decoding threads and the file's reader threads running
        batches.close()
        reader.close()
        for q in queues:
            q.put(_DONE)
        for t in writers:
            t.join()
        if gc_was_enabled:
            gc.enable()
    if errors:
        raise errors[0]
    if not written[0]:  # no event: one file of no rows, of the whole schema
        pq.write_table(EVENTS_SCHEMA.empty_table(), part_path, **parquet_options(EVENTS_SCHEMA))
        written[0].append(part_path)
    if progress is not None:
        progress(reader.source.json_bytes - last_bytes, 0)
    header = reader.header
    rank_value, rank_source = resolve_rank(path, header, rank, single)
    res = describe(path, header, reader, rank_value, rank_source, dict(phases))
    return FileResult(res["trace"], res["process_groups"], [f for w in written for f in w], reader.source.stat)


def release_memory() -> None:
    """Hand freed memory back to the system: Arrow's pool keeps what it freed, and so does glibc's malloc
    (per thread arena); after a large file that is a few hundred MB of peak that no longer holds data."""
    pa.default_memory_pool().release_unused()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def _int64(v):
    """An integer that fits the int64 columns, else None (booleans are not integers here)."""
    return v if type(v) is int and -(1 << 63) <= v < (1 << 63) else None


def _text(v):
    """A string field as text: a string, a number or a bool as written; an object or a list: None."""
    if v is None or isinstance(v, (dict, list)):
        return None
    return v if isinstance(v, str) else msgspec.json.encode(v).decode()


def describe(path, header: dict, reader: TraceReader, rank: int, rank_source: str, phases: dict) -> dict:
    """The trace's row in `traces` and its process groups. Header fields of an unexpected type are left
    NULL (the whole header stays in `metadata` as written)."""
    info = header.get("distributedInfo") if isinstance(header.get("distributedInfo"), dict) else {}
    devices = header.get("deviceProperties") if isinstance(header.get("deviceProperties"), list) else []
    host = header.get("host_name") or header.get("hostname") or header.get("hostName")
    base = header.get("baseTimeNanoseconds")
    trace_host = host_in_trace(path, header)  # the run's rows are completed by hosts.assign_hosts
    pgs = []
    pg_config = info.get("pg_config")
    for pg in pg_config if isinstance(pg_config, list) else []:
        if not isinstance(pg, dict):
            continue
        ranks = pg.get("ranks")
        pgs.append({
            "rank": rank,
            "pg_name": _text(pg.get("pg_name")),
            "pg_desc": _text(pg.get("pg_desc")),
            "backend_config": _text(pg.get("backend_config")),
            "pg_size": _int64(pg.get("pg_size")),
            "ranks": [r for r in ranks if _int64(r) is not None] if isinstance(ranks, list) else None,
        })
    trace = {
        "rank": rank,
        "rank_source": rank_source,
        "world_size": _int64(info.get("world_size")),
        "backend": _text(info.get("backend")),
        "nccl_version": _text(info.get("nccl_version")),
        "host_name": _text(host),
        "host": trace_host[0],
        "host_source": trace_host[1],
        "path": os.path.abspath(path),
        "file_bytes": reader.source.file_bytes,
        "json_bytes": reader.source.json_bytes,
        "sha256": reader.sha256,
        "event_count": reader.event_count,
        "phase_counts": msgspec.json.encode(dict(sorted(phases.items(), key=lambda kv: str(kv[0])))).decode(),
        "schema_version": _int64(header.get("schemaVersion")),
        "base_time_ns": _int64(base),
        "display_time_unit": _text(header.get("displayTimeUnit")),
        "device_properties": msgspec.json.encode(devices).decode(),
        "gpu_name": _text(devices[0].get("name")) if devices and isinstance(devices[0], dict) else None,
        "metadata": msgspec.json.encode(header).decode(),
    }
    return {"trace": trace, "process_groups": pgs}
