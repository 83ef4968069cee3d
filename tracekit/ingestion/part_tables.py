"""A rank part's tables in one file, for the reduce to read at the cost of one file a rank.

A part keeps each per-rank fact as Parquet (facts/NAME.parquet: the part's record), and, written once
beside training, every one of them and the finish's per-rank tables (derive.RANK_FINISH) again as Arrow
IPC streams, end to end in ``tables.arrows``; part.json says where each starts and how long it is. The
reduce's compaction then opens one file per rank, not twelve or more, and decodes no Parquet: a
DuckDB COPY of 256 ranks' small fact files spent most of its time opening files (about 0.5 ms each; 49,152 of
them at 4,096 ranks). The rows and their order are those of the Parquet files (rank by rank, each in its
file's order); the compacted files are Parquet, as a central ingest's.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import msgspec
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from ..arrow_columns import int64_column, int64_lists, string_column
from ..compact import RANKS_PER_FILE, partition
from ..errors import RunError
from ..layout.paths import PART_FACTS, PART_FINISH, facts_dir, ranks_file
from ..rules import stored
from ..run_tables import PG_SCHEMA, rows_table

TABLES_FILE = "tables.arrows"
MAX_BYTES = 512 << 10  # a part whose Parquet tables are larger on disk keeps them only (no tables file)
ROW_GROUP = 122_880  # rows a row group of a compacted file, as compact.py's COPY writes them


def write_tables(part: str, names: list[str], finish: list[str]) -> dict | None:
    """``part``'s facts ``names`` (facts/NAME.parquet) and finish tables ``finish`` (finish/NAME.parquet)
    as IPC streams in ``part/tables.arrows``; part.json's entry: {"file": ..., "tables": {name: [offset,
    length]}}. None (no file) where their Parquet files take more than MAX_BYTES: uncompressed, a big rank's
    tables are about 8 times its Parquet files (20 MB against 2.5 MB for a 54 MB trace), a compressed stream
    read slower than the Parquet file (lz4, zstd: 3 to 60 ms a part), and for such a rank the files opened
    are a small part of the reduce's work."""
    files = {name: os.path.join(part, folder, name + ".parquet")
             for folder, these in ((PART_FACTS, names), (PART_FINISH, finish)) for name in these}
    if sum(os.path.getsize(p) for p in files.values()) > MAX_BYTES:
        return None
    where = {}
    with open(os.path.join(part, TABLES_FILE), "wb") as f:
        for name, path in files.items():
            table = pq.ParquetFile(path).read()  # (read_table imports pyarrow.dataset, and it pandas: 0.3 s)
            start = f.tell()
            with ipc.new_stream(f, table.schema) as w:
                w.write_table(table)
            where[name] = [start, f.tell() - start]
        f.flush()
        os.fsync(f.fileno())
    return {"file": TABLES_FILE, "tables": where}


def _read(part: str, doc: dict, names: list[str], finish: list[str]) -> dict[str, pa.Table]:
    """The tables ``names`` + ``finish`` of one part: from its tables file, or (a part without one, or
    without a table there) from its Parquet files."""
    got: dict[str, pa.Table] = {}
    entry = doc.get("tables") or {}
    where = entry.get("tables") or {}
    path = os.path.join(part, entry.get("file") or TABLES_FILE)
    try:
        if where:
            with open(path, "rb") as f:
                data = pa.py_buffer(f.read())
            for name in names + finish:
                if name in where:
                    start, length = where[name]
                    got[name] = ipc.open_stream(data.slice(start, length)).read_all()
        for folder, these in ((PART_FACTS, names), (PART_FINISH, finish)):
            for name in these:
                if name not in got:
                    got[name] = pq.ParquetFile(os.path.join(part, folder, name + ".parquet")).read()
    except (OSError, pa.ArrowException) as exc:
        raise RunError(f"{part}: a rank part whose tables cannot be read ({exc}); make it again from its "
                       "trace, or remove it") from None
    return got


def _finish_dir(run_dir: str, scratch: str, name: str) -> str:
    """Where the compaction joins the parts' finish table ``name``: the run's facts/NAME when the run keeps
    it (rules.stored), else the finish's scratch."""
    return facts_dir(run_dir, name) if stored(name) else os.path.join(scratch, name)


def compact_parts(run_dir: str, parts: dict[int, str], docs: dict[int, dict], names: list[str],
                  finish: list[str], scratch: str, workers: int | None = None, linked=None) -> dict:
    """The parts' facts ``names`` compacted into ``run_dir`` as compact.py lays them out (facts/NAME/all.parquet,
    or facts/NAME/ranks-LO-HI.parquet for each partition of up to 256 ranks), and their finish tables
    ``finish`` joined by the same partitions into ``scratch/NAME/ranks-LO-HI.parquet`` for the finish to read
    (finish_run's ``made``: {name: {rank: file}}, only where every part of a partition has the table)."""
    ranks = sorted(parts)
    chunks = partition(ranks, RANKS_PER_FILE)
    made: dict[str, dict[int, str]] = {}
    for name in names:
        os.makedirs(facts_dir(run_dir, name), exist_ok=True)
    for name in finish:  # a stored one (why_late's lead-ups) in the run, the others in the scratch
        os.makedirs(_finish_dir(run_dir, scratch, name), exist_ok=True)

    def one(chunk: list[int]) -> dict[str, str]:
        file_name = "all.parquet" if len(chunks) == 1 else ranks_file(chunk[0], chunk[-1])
        have = [n for n in finish if all(n in (docs[r].get("finish") or ()) for r in chunk)]
        outs = {n: os.path.join(facts_dir(run_dir, n), file_name) for n in names}
        outs.update({n: os.path.join(_finish_dir(run_dir, scratch, n), file_name) for n in have})
        # ``linked(chunk, have, outs)``: the partition's files linked from elsewhere (a group its parts'
        # writers joined: part_groups.link_group), True where they were, else it is compacted here
        if linked is None or not linked(chunk, have, outs):
            compact_chunk(parts, docs, chunk, names, have, outs)
        return {n: outs[n] for n in have}

    with ThreadPoolExecutor(max_workers=max(1, workers or os.cpu_count() or 1)) as pool:
        for chunk, fut in [(c, pool.submit(one, c)) for c in chunks]:
            for name, path in fut.result().items():
                for r in chunk:
                    made.setdefault(name, {})[r] = path
    return made


def compact_chunk(parts: dict[int, str], docs: dict[int, dict], chunk: list[int], names: list[str],
                  have: list[str], outs: dict[str, str]) -> None:
    """The tables ``names`` (facts) and ``have`` (finish) of the parts of ranks ``chunk``, rank by rank, each
    in its file's order, into one Parquet file each, ``outs[name]``: row groups of ROW_GROUP rows, as
    compact.py's COPY writes them."""
    pending: dict[str, list[pa.Table]] = {n: [] for n in outs}
    counts = dict.fromkeys(outs, 0)
    writers: dict[str, pq.ParquetWriter] = {}

    def flush(name: str, final: bool = False) -> None:
        tables = pending[name]
        if not tables:
            return
        table = pa.concat_tables(tables)
        rows = table.num_rows if final else table.num_rows // ROW_GROUP * ROW_GROUP
        if not rows and not (final and name not in writers):
            return
        if name not in writers:
            writers[name] = pq.ParquetWriter(outs[name], table.schema)
        writers[name].write_table(table.slice(0, rows), row_group_size=ROW_GROUP)
        pending[name] = [table.slice(rows)] if rows < table.num_rows else []

    try:
        for r in chunk:
            got = _read(parts[r], docs[r], names, have)
            for name, table in got.items():
                if pending[name] and table.schema != pending[name][0].schema:
                    table = table.cast(pending[name][0].schema)
                pending[name].append(table)
                counts[name] += table.num_rows
                if counts[name] >= ROW_GROUP:
                    flush(name)
                    counts[name] = sum(t.num_rows for t in pending[name])
        for name in outs:
            flush(name, final=True)
    finally:
        for w in writers.values():
            w.close()


class _Group(msgspec.Struct, forbid_unknown_fields=True):
    """A process group as a part wrote it (PG_SCHEMA's columns), its ranks left as JSON text."""
    rank: int | None = None
    pg_name: str | None = None
    pg_desc: str | None = None
    backend_config: str | None = None
    pg_size: int | None = None
    ranks: msgspec.Raw = msgspec.Raw(b"null")


def groups_table(raws: list) -> pa.Table:
    """The process_groups table of the parts' groups (read_part: each one's JSON text). Each distinct list of
    ranks is decoded once: every rank lists every group it knows, the default group's 4,096 ranks in each of
    4,096 parts (decoded row by row as rows_table does, 1.6 s and 0.4 GB at 4,096 ranks)."""
    if not raws or not isinstance(raws[0], msgspec.Raw):  # (decoded already: a part read another way)
        return rows_table(raws, PG_SCHEMA)
    try:
        groups = msgspec.json.Decoder(list[_Group]).decode(b"[" + b",".join(raws) + b"]")
    except msgspec.DecodeError as exc:
        raise RunError(f"the rank parts' process groups cannot be read ({exc}); make the parts again from "
                       "their traces") from None
    lists: dict[bytes, int] = {}
    index = [lists.setdefault(bytes(g.ranks), len(lists)) for g in groups]
    decode = msgspec.json.Decoder(list[int] | None)
    try:
        unique = [decode.decode(k) for k in lists]
    except msgspec.DecodeError as exc:
        raise RunError(f"the rank parts' process groups cannot be read ({exc}); make the parts again from "
                       "their traces") from None
    # (by their buffers, arrow_columns: pa.array imports pandas, 0.3 s of the writer that joins a group; built
    # as JSON lines instead, as rows_table does, the cross-rank facts after it peaked 0.3 GB higher at 4,096
    # ranks, 5 runs each: kept, cause not found)
    ranks = int64_lists(unique).take(int64_column(index))
    build = {pa.int64(): int64_column, pa.string(): string_column}
    columns = {f.name: build[f.type]([getattr(g, f.name) for g in groups])
               for f in PG_SCHEMA if f.name != "ranks"}
    return pa.table({**columns, "ranks": ranks}, schema=PG_SCHEMA)
