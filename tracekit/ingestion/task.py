"""One ingest task: input files parsed into their events parts, then their ranks' facts derived beside
them. The same functions run in a local process pool (pool.py) or on a Dask worker (on_dask.py)."""

from __future__ import annotations

import shutil

from ..derive import derive_rank, derive_ranks
from ..errors import TracekitError
from ..layout.paths import part_facts_dir
from .one_file import ingest_file, release_memory
from .progress import make_sink


def run_task(args) -> dict:
    """One input file. ``args``: (path, events part, given rank, alone in its run, threads, derive here)."""
    path, part, rank, single, threads, derive_here = args
    res = ingest_file(path, part, rank=rank, progress=make_sink(), single=single, threads=threads)
    release_memory()  # what the decoding freed goes back to the system before DuckDB takes its share
    if derive_here:
        r = res["trace"]["rank"]
        derive_rank(res["parts"], r, res["trace"], res["process_groups"], part_facts_dir(part),
                    threads=threads, reduced=single)
    return res


def run_batch(batch) -> list:
    """Several input files: each parsed into its events part, then their ranks' facts derived together on
    one connection (derive_ranks), beside the first file's part. -> [(result, None) or (None, error)] in the
    batch's order; a file that fails is left out of the others' facts (a failing batch derive is redone rank
    by rank, so that the error names its file)."""
    if len(batch) == 1:
        try:
            return [(run_task(batch[0]), None)]
        except TracekitError as exc:
            return [(None, exc)]
    out: list = []
    for path, part, rank, single, threads, _ in batch:
        try:
            out.append((ingest_file(path, part, rank=rank, progress=make_sink(), single=single, threads=threads), None))
        except TracekitError as exc:
            out.append((None, exc))
    release_memory()
    ok = [(i, res) for i, (res, _) in enumerate(out) if res is not None]
    if not ok:
        return out
    items = [(res["parts"], res["trace"]["rank"], res["trace"], res["process_groups"]) for _, res in ok]
    try:
        derive_ranks(items, part_facts_dir(batch[ok[0][0]][1]), threads=batch[0][4])
        ranks = [r for _, r, _, _ in items]
        ok[0][1]["facts_label"] = f"{min(ranks)}-{max(ranks)}"
    except TracekitError:
        shutil.rmtree(part_facts_dir(batch[ok[0][0]][1]), ignore_errors=True)
        for i, res in ok:
            try:
                derive_rank(res["parts"], res["trace"]["rank"], res["trace"], res["process_groups"],
                            part_facts_dir(batch[i][1]), threads=batch[i][4])
            except TracekitError as exc:
                out[i] = (None, exc)
    return out
