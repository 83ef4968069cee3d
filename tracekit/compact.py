"""Compaction of the per-rank facts at the end of an ingest, partitioned by rank.

Each ingest task writes its rank's facts, facts/NAME/rank-R.parquet. A query that opened one file per rank
would spend its time opening files (4,096 ranks x 8 facts), so the reduce step joins them: up to
RANKS_PER_FILE ranks into one file (facts/NAME/all.parquet when that is all of them, else
facts/NAME/ranks-LO-HI.parquet, each holding the ranks LO to HI). The partitions are independent: they run
side by side, each on a DuckDB connection of its own with one thread and a bounded memory, so the work is
never one pass over every rank's facts, and its memory does not grow with the number of ranks.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import duckdb

from .layout.paths import ranks_file

RANKS_PER_FILE = 256


def _sql_string(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def _ranks_of(name: str) -> tuple[int, int]:
    """rank-R.parquet -> (R, R); rank-LO-HI.parquet (a batch of ranks derived together) -> (LO, HI)."""
    lo, _, hi = name[len("rank-"):-len(".parquet")].partition("-")
    return int(lo), int(hi or lo)


def partition(items: list, per: int | None = None, ranks=lambda item: (item, item)) -> list[list]:
    """``items`` in rank order cut into partitions, the one rule of compaction and of the finish
    (derive.finish_run): a partition spans at most ``per`` ranks from its first to its last, and a new one
    starts with the first item that would make it span more. ``ranks(item)`` -> the (first, last) rank it
    holds: a rank, or a file of a batch of ranks. Ranks 0, 1, 266, 267 with 256: [0, 1], [266, 267]."""
    per = per or RANKS_PER_FILE
    chunks: list[list] = []
    for item in items:
        if not chunks or ranks(item)[1] - ranks(chunks[-1][0])[0] + 1 > per:
            chunks.append([])
        chunks[-1].append(item)
    return chunks


def plan(fact_dir: str) -> list[tuple[list[str], str]]:
    """[(the rank files, the file they become)] for one fact's directory, partitioned by ``partition``."""
    parts = sorted((_ranks_of(f), f) for f in os.listdir(fact_dir) if f.startswith("rank-") and f.endswith(".parquet"))
    chunks = partition(parts, ranks=lambda part: part[0])
    out = []
    for c in chunks:
        name = "all.parquet" if len(chunks) == 1 else ranks_file(c[0][0][0], c[-1][0][1])
        out.append(([os.path.join(fact_dir, f) for _, f in c], os.path.join(fact_dir, name)))
    return out


def _join(files: list[str], dest: str) -> None:
    if len(files) == 1:  # one rank: its file is already the compacted one
        os.replace(files[0], dest)
        return
    con = duckdb.connect(config={"threads": 1, "memory_limit": "256MB"})
    try:
        con.execute(f"COPY (SELECT * FROM read_parquet([{', '.join(map(_sql_string, files))}], union_by_name = true)) "
                    f"TO {_sql_string(dest)} (FORMAT parquet, ROW_GROUP_SIZE 122880)")
    finally:
        con.close()
    for f in files:
        os.remove(f)


def compact(fact_dirs: list[str], workers: int | None = None) -> int:
    """Compact every fact directory's rank files; returns the number of files written."""
    jobs = [job for d in fact_dirs if os.path.isdir(d) for job in plan(d)]
    with ThreadPoolExecutor(max_workers=max(1, workers or os.cpu_count() or 1)) as pool:
        for fut in [pool.submit(_join, files, dest) for files, dest in jobs]:
            fut.result()
    return len(jobs)
