"""The events of many small ranks packed into few files, at the end of an ingest's map.

Each rank's events are written to a folder of their own, events/rank=R/ (the rank from the folder's name).
A job of thousands of small ranks then costs every query that reads the events one file opened per rank:
10,000 ranks of one event each spent minutes of each command opening files. Where a run has
PACK_MIN_RANKS ranks or more, the ranks whose events hold at most PACK_RANK_BYTES are joined, in rank
order, into events/packed/ranks-LO-HI.parquet (a rank column first, then the columns of a rank's file,
the rows in the order of its files), up to RANKS_PER_FILE ranks and PACK_FILE_BYTES a file; their folders
go. Larger ranks keep their folder (opening their file is small beside reading it). layout.bind reads
both alike: every query gives the same rows.
"""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor

import duckdb

from .compact import RANKS_PER_FILE
from .layout.bind import HIVE, read_events, sql_string
from .layout.paths import EVENTS_DIR, packed_dir, ranks_file

PACK_MIN_RANKS = 64  # a run of fewer ranks keeps a folder per rank
PACK_RANK_BYTES = 1 << 20  # a rank with more bytes of events keeps its folder
PACK_FILE_BYTES = 64 << 20  # the bytes of rank files joined into one packed file, at most


def _rank_folders(run: str) -> list[tuple[int, list[str], int]]:
    """[(rank, its events files, their bytes)] of the run's rank folders, in rank order."""
    top = os.path.join(run, EVENTS_DIR)
    out = []
    for name in os.listdir(top) if os.path.isdir(top) else []:
        if not name.startswith("rank="):
            continue
        d = os.path.join(top, name)
        files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".parquet"))
        out.append((int(name[len("rank="):]), files, sum(os.path.getsize(f) for f in files)))
    return sorted(out)


def plan(run: str) -> list[list[tuple[int, list[str], int]]]:
    """The packed files to write: each a list of (rank, files, bytes) in rank order."""
    ranks = _rank_folders(run)
    if len(ranks) < PACK_MIN_RANKS:
        return []
    chunks: list[list] = []
    size = 0
    for item in ranks:
        rank, files, b = item
        if b > PACK_RANK_BYTES or not files:
            continue
        if not chunks or rank - chunks[-1][0][0] + 1 > RANKS_PER_FILE or size + b > PACK_FILE_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append(item)
        size += b
    return [c for c in chunks if len(c) > 1]


def _pack(run: str, chunk: list) -> None:
    files = [f for _, fs, _ in chunk for f in fs]
    dest = os.path.join(packed_dir(run), ranks_file(chunk[0][0], chunk[-1][0]))
    con = duckdb.connect(config={"threads": 1, "memory_limit": "256MB", "preserve_insertion_order": True})
    try:
        con.execute(f"COPY (SELECT rank, * EXCLUDE (rank) FROM {read_events(files, HIVE)}) "
                    f"TO {sql_string(dest + '.tmp')} (FORMAT parquet, ROW_GROUP_SIZE 122880)")
    finally:
        con.close()
    os.replace(dest + ".tmp", dest)
    for f in files:
        shutil.rmtree(os.path.dirname(f), ignore_errors=True)


def pack_events(run: str, workers: int | None = None) -> int:
    """Pack the small ranks' events of ``run`` (a version being built); returns the packed files written."""
    chunks = plan(run)
    if not chunks:
        return 0
    os.makedirs(packed_dir(run), exist_ok=True)
    with ThreadPoolExecutor(max_workers=max(1, workers or os.cpu_count() or 1)) as pool:
        for fut in [pool.submit(_pack, run, c) for c in chunks]:
            fut.result()
    return len(chunks)
