"""The catalogue of communication kernels: kernel name pattern -> library, kind, collective.

The table ships as ``comm_kernels.csv`` beside this module (one row per pattern, with the public source
that names the kernel) and is loaded on every connection as ``tk_comm_kernels``. A user adds rows with
the environment variable ``TRACEKIT_COMM_KERNELS``: one or more CSV files of the same columns
(``os.pathsep``-separated); their rows come first, so they can also reclassify a shipped pattern. The
facts of a run depend on the catalogue: a run derived under another catalogue is refused when opened,
until ``tracekit ingest --rederive`` derives it again (see rules.facts_key).
"""

from __future__ import annotations

import csv
import functools
import os
from importlib import resources

from .. import settings
from ..errors import TracekitError

ENV = "TRACEKIT_COMM_KERNELS"
KINDS = ("collective", "p2p", "ep_dispatch", "ep_combine", "sync")
COLLECTIVES = ("allreduce", "allgather", "reduce_scatter", "broadcast", "reduce", "alltoall", "alltoallv",
               "send", "recv", "sendrecv", "barrier", "gather", "scatter")
COLUMNS = ("pattern", "library", "kind", "collective", "source")


def _read(path: str, text: str) -> list[tuple[str, str, str, str | None, str]]:
    rows = list(csv.reader(text.splitlines()))
    if not rows or [c.strip() for c in rows[0][:3]] != list(COLUMNS[:3]):
        raise TracekitError(f"{path}: line 1: a communication-kernel catalogue starts with the header "
                            f"{','.join(COLUMNS)} (collective and source may be left empty); fix the file or "
                            f"unset {ENV}")
    header = [c.strip() for c in rows[0]]
    out = []
    for n, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        rec = dict(zip(header, (c.strip() for c in row), strict=False))  # a short row leaves the last columns empty
        pattern, library, kind = rec.get("pattern", ""), rec.get("library", ""), rec.get("kind", "")
        coll = rec.get("collective") or None
        where = f"{path}: line {n}"
        if not pattern or not library:
            raise TracekitError(f"{where}: pattern and library must not be empty; fix the row or unset {ENV}")
        if kind not in KINDS:
            raise TracekitError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}; fix the row or unset {ENV}")
        if coll is not None and coll not in COLLECTIVES:
            raise TracekitError(f"{where}: collective {coll!r} is not one of {', '.join(COLLECTIVES)} (or empty); "
                                f"fix the row or unset {ENV}")
        out.append((pattern, library, kind, coll, rec.get("source", "")))
    return out


@functools.lru_cache(maxsize=8)
def _rows_for(extra: str) -> tuple:
    rows = []
    for path in [p for p in extra.split(os.pathsep) if p]:
        try:
            with open(path, newline="") as f:
                text = f.read()
        except OSError as exc:
            raise TracekitError(f"{path}: cannot read this communication-kernel catalogue ({exc.strerror}); "
                                f"fix {ENV} or unset it") from None
        rows += _read(path, text)
    shipped = resources.files(__package__).joinpath("comm_kernels.csv")
    rows += _read(str(shipped), shipped.read_text())
    return tuple((i + 1, *r) for i, r in enumerate(rows))


def comm_kernel_rows() -> list[tuple]:
    """(rule_order, pattern, library, kind, collective, source) for the tk_comm_kernels table: the user's
    rows (TRACEKIT_COMM_KERNELS) first, then the shipped ones; the first pattern a name matches wins."""
    return list(_rows_for(settings.comm_kernel_catalogues()))
