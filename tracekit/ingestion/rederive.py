"""Derive a run's facts again from its own events (the traces are not needed): for a run written by other
rules, or on request (``tracekit ingest --rederive RUN``, ``tracekit.rederive(RUN)``).

It goes through the same lock and switch as ingest: under the run's writer lock a new version is built
inside the run (its events and tables linked, not copied, where the file system allows), the facts are
derived into it, and the run's CURRENT is switched to it in one rename. A reader never sees half of it.
A run of an earlier layout is migrated first (layout/legacy.py)."""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from ..derive import SMALL_RUN_BYTES, derive_rank, derive_run, reduce_run
from ..errors import RunError, TracekitError
from ..layout.damage import again, damaged, events_missing, rank_without_events
from ..layout.legacy import link_tree
from ..layout.manifest import read_manifest, write_manifest
from ..layout.paths import (
    EVENTS_DIR,
    FACTS_DIR,
    TABLE_FILES,
    is_run,
    place_facts,
    rank_facts_scratch,
    rank_parts,
    table_path,
)
from ..layout.versions import collect, current_version, left_aside, resolve_output, version_dir, writer_lock
from ..rules import CLOCKS, FACTS, FINISHED, REDUCED, facts_key
from .run_writer import build_and_switch


def _share_inputs(src: str, dst: str) -> None:
    """The events and tables of version ``src`` into the new version ``dst``: what derive reads."""
    link_tree(src, dst, [*TABLE_FILES.values(), EVENTS_DIR])


def rederive_run(run: str) -> None:
    """Derive the facts of run ``run`` again from its events, as a new version switched in whole."""
    from ..layout.objstore import is_store_url
    from ..layout.paths import refuse_url

    if is_store_url(run):
        raise RunError(f"{run}: --rederive works on a run directory; ingest the traces into {run} again (or reduce "
                       "its parts again: tracekit ingest --reduce), which derives the facts with this tracekit")
    refuse_url(run, RunError)
    out = resolve_output(os.path.abspath(run))
    if not is_run(out) and left_aside(out) is None:  # (one a killed migration left aside: put back below)
        raise RunError(f"{run}: not a tracekit run (no readable manifest.json); --rederive takes a run directory")
    try:
        with writer_lock(out):
            collect(out)
            _rederive_locked(out, run)
    except OSError as exc:  # a read-only run, a full disk: nothing was replaced
        where = f" ({exc.filename})" if exc.filename else ""
        raise RunError(f"{run}: cannot write its facts ({exc.strerror or exc}{where}); the run is unchanged. "
                       "Re-derive a writable copy, or ingest the traces again with -o elsewhere") from None


def _rederive_locked(out: str, run: str) -> None:
    src = current_version(out)
    manifest = read_manifest(src)
    tmp = version_dir(out)
    os.makedirs(tmp)

    def build():
        traces, pgs = _inputs(run, src, again(manifest))
        _share_inputs(src, tmp)
        align = manifest.get("options", {}).get("align", True)
        with damaged(run, tmp, "its events", again(manifest), (duckdb.Error,), within=os.path.join(tmp, EVENTS_DIR)):
            derive_facts(tmp, traces, pgs, align)
        reduce_run(tmp, align=align)
        manifest["facts_key"] = facts_key()
        write_manifest(tmp, manifest)

    build_and_switch(build, tmp, out)


def derive_facts(tmp: str, traces: list[dict], pgs: list[dict], align: bool) -> None:
    """The per-rank facts of version ``tmp``, the way an ingest of the same traces derives them: a small run
    of several ranks whole, on one connection (derive_run: a connection and the planning of the rules per
    rank were most of the time, 3x a fresh ingest on DLRM's 8 ranks); otherwise rank by rank, every core
    busy (a rank alone: its cross-rank facts and finish with its facts)."""
    cores = os.cpu_count() or 1
    if len(traces) > 1 and sum(t["file_bytes"] or 0 for t in traces) <= SMALL_RUN_BYTES:
        try:
            derive_run(tmp, threads=cores, align=align)
            return
        except TracekitError:  # name the file whose facts fail: rank by rank, as ingest does
            shutil.rmtree(os.path.join(tmp, FACTS_DIR), ignore_errors=True)
    single = len(traces) == 1
    workers = min(cores, len(traces))

    def one(t):
        rank = t["rank"]
        facts = rank_facts_scratch(tmp, rank)
        derive_rank(rank_parts(tmp, rank), rank, t, [p for p in pgs if p["rank"] == rank], facts,
                    threads=max(1, cores // workers), reduced=single)
        return rank, facts

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for rank, facts in pool.map(one, traces):
            place_facts(facts, tmp, rank, FACTS, REDUCED + [CLOCKS] + FINISHED if single else ())


def _inputs(run: str, src: str, fix: str) -> tuple[list[dict], list[dict]]:
    """The traces and process groups of version ``src``, what derive reads beside the events; refused, the
    run unchanged, where one of them or a rank's events cannot be read (the facts of the ranks left would
    be derived as if the run had only those), with ``fix`` (layout.damage.again)."""
    tables = {}
    for name in ("traces", "process_groups"):
        path = table_path(src, name)
        with damaged(run, src, f"its {name.replace('_', ' ')} table", fix, (pa.ArrowException, OSError),
                     path=path):
            tables[name] = _rows(path)
    rank = rank_without_events(src, sorted(t["rank"] for t in tables["traces"]), none_at_all=True)
    if rank is not None:
        raise events_missing(run, src, rank, "its facts cannot be derived again without them, and the run is unchanged",
                             fix)
    return tables["traces"], tables["process_groups"]


def _rows(path: str) -> list[dict]:
    """A small table's rows. (pq.read_table goes through pyarrow.dataset, which imports pandas: 0.8 s of
    a DLRM rederive's 2 s.)"""
    return pq.ParquetFile(path).read().to_pylist()
