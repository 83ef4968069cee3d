"""One ingest task: input files parsed into their events parts, then their ranks' facts derived beside
them. The same functions run in a local process pool (pool.py) or on a Dask worker (on_dask.py)."""

from __future__ import annotations

import shutil

from ..derive import derive_rank, derive_ranks
from ..errors import TracekitError
from ..layout.paths import part_facts_dir
from .one_file import ingest_file, release_memory
from .progress import make_sink
from .records import FileResult, IngestTask


def run_task(task: IngestTask) -> FileResult:
    """One input file: parsed into its events part, then (``derive_here``) its rank's facts beside it."""
    res = ingest_file(task.path, task.part, rank=task.rank, progress=make_sink(), single=task.single,
                      threads=task.threads)
    release_memory()  # what the decoding freed goes back to the system before DuckDB takes its share
    if task.derive_here:
        derive_rank(res.parts, res.rank, res.trace, res.process_groups, part_facts_dir(task.part),
                    threads=task.threads, reduced=task.single)
    return res


def run_batch(batch: list[IngestTask]) -> list[tuple[FileResult | None, TracekitError | None]]:
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
    for task in batch:
        try:
            out.append((ingest_file(task.path, task.part, rank=task.rank, progress=make_sink(), single=task.single,
                                    threads=task.threads), None))
        except TracekitError as exc:
            out.append((None, exc))
    release_memory()
    ok = [(task, res) for task, (res, _) in zip(batch, out, strict=True) if res is not None]
    if not ok:
        return out
    facts = part_facts_dir(ok[0][0].part)
    try:
        derive_ranks([(res.parts, res.rank, res.trace, res.process_groups) for _, res in ok], facts,
                     threads=batch[0].threads)
        ok[0][1].facts_label = f"{min(res.rank for _, res in ok)}-{max(res.rank for _, res in ok)}"
    except TracekitError:
        shutil.rmtree(facts, ignore_errors=True)
        for i, (task, (res, _)) in enumerate(zip(batch, out, strict=True)):
            if res is None:
                continue
            try:
                derive_rank(res.parts, res.rank, res.trace, res.process_groups, part_facts_dir(task.part),
                            threads=task.threads)
            except TracekitError as exc:
                out[i] = (None, exc)
    return out
