"""Ingest many trace files into one run directory, atomically.

The run's next version is built inside the run (layout/versions.py) and switched in at the end by
replacing one small file, so a crash or Ctrl-C never leaves a half-written run and an earlier run stays
intact until the new one is whole; an interrupt says which of the two the run now holds.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import os
import shutil
import time

from .. import __version__, settings
from ..derive import SMALL_RUN_BYTES, derive_rank, derive_run, reduce_run
from ..discover import check_unique_ranks, find_traces, match_rank_options, pick_iteration, rank_from_name
from ..errors import RankError, TracekitError, disk_error
from ..hosts import assign_hosts, parse_hosts_option
from ..layout.bind import check_path
from ..layout.manifest import read_manifest, write_manifest
from ..layout.paths import (
    FACTS_DIR,
    RUN_FORMAT,
    has_marker,
    is_being_made,
    is_run,
    part_facts_dir,
    place_facts,
    rank_dir,
    rank_facts_scratch,
    rank_parts,
    refuse_url,
    staging_part,
    table_path,
)
from ..layout.versions import (
    collect,
    current_version,
    discard,
    is_current,
    resolve_output,
    switch,
    version_dir,
    writer_lock,
)
from ..pack_events import pack_events
from ..rules import CLOCKS, FACTS, FINISHED, REDUCED, facts_key
from ..run_tables import PG_SCHEMA, SCHEMA_VERSION, TRACES_SCHEMA, rows_table, write_run_table
from .one_file import written_parts
from .progress import IngestProgress
from .records import FileResult, IngestTask
from .source import same_stat, stat_now


def sha256_of(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def is_up_to_date(run_dir: str, files: list[str], options: dict | None = None) -> bool:
    """True when run_dir was built by this schema from exactly these files, byte for byte (and, when
    given, with these options: hosts, align). A file whose size, inode, mtime and ctime are those
    recorded is not read again; any other is hashed."""
    m = read_manifest(run_dir)
    if not m or m.get("schema_version") != SCHEMA_VERSION or m.get("facts_key") != facts_key():
        return False
    if options is not None and m.get("options", {"hosts": None, "align": True}) != options:
        return False
    known = {i["path"]: i for i in m.get("inputs", [])} | {i["path"]: i for i in m.get("failures", [])}
    if sorted(known) != sorted(files):
        return False
    for f in files:
        entry = known[f]
        try:
            if same_stat(entry.get("stat"), f):
                continue
            if entry.get("bytes") != os.path.getsize(f) or entry.get("sha256") != sha256_of(f):
                return False
        except OSError:
            return False  # unreadable now: ingest again, and say why there
    return True


def _or_none(fn, path):
    try:
        return fn(path)
    except OSError:
        return None


def batches(tasks: list, jobs: int) -> list[list]:
    """Small files in batches (derive_ranks), enough batches to keep every worker busy: up to BATCH_FILES
    files of BATCH_BYTES in all, in rank order where the names give ranks (a batch's facts then hold
    neighbouring ranks). Files alone in the run, or past the size, stay one per task."""
    if len(tasks) <= 2 * jobs:
        return [[t] for t in tasks]
    per = max(1, min(BATCH_FILES, len(tasks) // (2 * jobs)))
    ordered = sorted(tasks, key=lambda t: (rank_from_name(t.path) is None, rank_from_name(t.path) or 0, t.path))
    out: list[list] = []
    size = 0
    for t in ordered:
        b = _or_none(os.path.getsize, t.path) or 0
        if not out or len(out[-1]) >= per or size + b > BATCH_BYTES:
            out.append([])
            size = 0
        out[-1].append(t)
        size += b
    return out


BATCH_FILES = 16
BATCH_BYTES = 16 << 20




def ingest_run(paths, out: str, *, execute, jobs: int | None = None, on_error: str = "fail", force: bool = False,
               ranks: dict | None = None, show_progress: bool | None = None, scheduler: str | None = None,
               iteration: int | None = None, hosts=None, align: bool = True, wait_s: float = 0) -> bool:
    """Build the run directory ``out`` from ``paths``. Returns False when it was already up to date.
    ``wait_s``: wait that long for another process writing ``out`` (a cache fill), instead of failing.

    Each batch of files is one task (parse + those ranks' facts, tracekit/ingestion/task.py), run by
    ``execute``: pool.run_in_pool (a local process pool of ``jobs`` processes) or, with ``scheduler``
    (``tcp://host:port`` of a running ``dask scheduler``, or ``local`` for a LocalCluster of ``jobs``
    workers), on_dask.run_on_dask; both take (batches, jobs, run being built, done, progress,
    scheduler=). ``hosts``: each rank's host where the traces do not say it (tracekit.hosts: a mapping,
    or N consecutive ranks per host)."""
    if on_error not in ("fail", "skip"):
        raise TracekitError(f"on_error must be 'fail' or 'skip', not {on_error!r}")
    settings.check()  # a bad setting stops here, not in a worker process (where --on-error skip hides it)
    refuse_url(out)  # before any work: never a local folder named 'gs:' (s3://: to_store.py, api.py sends it there)
    files = pick_iteration(find_traces(list(paths)), iteration)
    out = resolve_output(os.path.abspath(out))  # a user's link to a run: update that run, keep the link
    refuse_output(out, files)  # before the lock: a refusal leaves no lock file behind
    parse_hosts_option(hosts)
    with writer_lock(out, wait_s=wait_s):
        collect(out)
        return _ingest_locked(files, out, execute, jobs, on_error, force, ranks, show_progress, scheduler,
                              {"hosts": hosts, "align": bool(align)})


def refuse_output(out: str, files: list[str]) -> None:
    """Refuse an -o that ingest must not replace: not a directory, the root, a directory holding anything
    but a tracekit run (one rule: layout.paths.is_run, never a file name alone), or one holding an input."""
    check_path(out)
    if not os.path.basename(out) or os.path.dirname(out) == out:
        raise TracekitError(f"{out}: a run cannot be the root directory; choose another -o")
    if os.path.exists(out) and not os.path.isdir(out):
        raise TracekitError(f"{out}: exists and is not a directory; choose another -o")
    if os.path.isdir(out) and not os.path.islink(out) and not is_being_made(os.listdir(out)) \
            and not (is_run(out) or has_marker(out)):
        raise TracekitError(f"{out}: exists, is not empty and is not a tracekit run (no manifest that tracekit "
                            "wrote); a run replaces its directory, so choose another -o (or remove that directory "
                            "yourself)")
    real = os.path.realpath(out)
    inside = [f for f in files if f.startswith(out + os.sep) or os.path.realpath(f).startswith(real + os.sep)]
    if inside:
        raise TracekitError(f"{inside[0]} is inside the output run {out}, which ingest replaces whole (the input "
                            "would be deleted): choose another -o, or move the traces out first")


def _ingest_locked(files, out, execute, jobs, on_error, force, ranks, show_progress, scheduler,
                   options=None) -> bool:
    options = options or {"hosts": None, "align": True}
    options["hosts"] = parse_hosts_option(options["hosts"])  # a bad --hosts fails before any work
    refuse_output(out, files)  # again, now that this process holds the lock
    current = current_version(out)
    if not force and current and is_up_to_date(current, files, options):
        return False
    given = match_rank_options(ranks or {}, files)
    tmp = version_dir(out)  # built inside the run, switched in whole when complete (see layout/versions.py)
    os.makedirs(os.path.dirname(staging_part(tmp, 0)))

    def build():
        start = time.perf_counter()
        results, failures, executor = _ingest_all(files, tmp, execute, jobs, on_error, given, show_progress,
                                                  scheduler)
        executor["timings"] = {"map_s": round(time.perf_counter() - start, 3)}  # parse and per-rank facts
        _finish(tmp, results, failures, executor, options)

    try:
        build_and_switch(build, tmp, out)
    except Exception as exc:  # the disk, not the input: ENOSPC, EROFS, EACCES, EDQUOT ... (DuckDB's words too)
        disk = exc if isinstance(exc, OSError) and not isinstance(exc, TimeoutError) else disk_error(exc)
        if disk is None:
            raise
        raise TracekitError(cannot_write(out, disk)) from None
    return True


def build_and_switch(build, tmp: str, out: str) -> None:
    """``build()`` the version ``tmp`` of run ``out``, switch it in, collect the versions it replaces. An
    interrupt (Ctrl-C, SIGTERM, DuckDB's "Query interrupted") at any moment leaves the previous version or
    the new one live, never neither, and raises Interrupted saying which: the switch and the note that it
    happened are one step that signals wait for (interrupts.deferred)."""
    from .interrupts import Interrupted, deferred, is_interrupt, note_switched

    switched = False
    earlier = current_version(out) is not None  # (a first ingest cut short leaves no run to call intact)
    try:
        try:
            build()
            with deferred():
                switch(tmp, out)
                switched = True
                note_switched(out)
            collect(out)
        except Exception as exc:
            if is_interrupt(exc):
                raise KeyboardInterrupt from None
            raise
    except KeyboardInterrupt:
        raise Interrupted(out, switched or is_current(out, tmp), earlier) from None
    finally:
        if not switched and not is_current(out, tmp):
            with deferred():
                discard(tmp)


def cannot_write(out: str, exc: OSError) -> str:
    """One line for a write that failed: what failed, where, how much room that file system has left."""
    where = exc.filename or out
    room = ""
    with contextlib.suppress(OSError):  # (the run's versions are built beside it: the same file system)
        d = os.path.dirname(out)
        room = f"; {shutil.disk_usage(d).free / 2**20:,.0f} MB free on the file system of {d}"
    return (f"cannot write the run {out}: {exc.strerror or exc} (writing {where}{room}); nothing was replaced "
            "(an earlier run there is intact). Free space, or choose another -o")


def _ingest_all(files, tmp, execute, jobs, on_error, given, show_progress, scheduler=None):
    cores = max(1, jobs or os.cpu_count() or 1)
    jobs = min(cores, len(files))  # one process per file at a time; cores left over go to threads within a file
    # a remote worker's cores are unknown here
    threads = max(1, cores // jobs) if not scheduler or scheduler == "local" else 1
    total = sum(_or_none(os.path.getsize, f) or 0 for f in files)
    whole_run = not scheduler and len(files) > 1 and total <= SMALL_RUN_BYTES
    tasks = [IngestTask(f, staging_part(tmp, i), given.get(f), len(files) == 1, threads, not whole_run)
             for i, f in enumerate(files)]
    results: list[tuple[IngestTask, FileResult]] = []
    failures: list[dict] = []
    with IngestProgress(len(files), total, show_progress) as prog:
        def done(task: IngestTask, result: FileResult | None = None, exc=None, worker="local"):
            path, part = task.path, task.part
            if exc is None:
                result.worker = worker
                results.append((task, result))
            elif isinstance(exc, TracekitError) and on_error == "skip":
                failures.append({"path": path, "bytes": _or_none(os.path.getsize, path),
                                 "stat": _or_none(stat_now, path),  # (before the hash: the file it hashes)
                                 "sha256": _or_none(sha256_of, path), "reason": str(exc),
                                 "exit_code": exc.exit_code})
                for written in written_parts(part):
                    if os.path.exists(written):
                        os.remove(written)
                shutil.rmtree(part_facts_dir(part), ignore_errors=True)
            else:
                if isinstance(exc, TracekitError) and len(tasks) > 1:  # what --on-error skip would have passed
                    # (said for ingest's option: a command given the traces, `report DIR`, has none)
                    exc.args = (f"{str(exc).rstrip('.')}; or leave this file out: `tracekit ingest TRACES "
                                "--on-error skip -o RUN` ingests the others, then name RUN instead of the traces",)
                raise exc
            prog.file_done(_or_none(os.path.getsize, path) or 0)

        groups = batches(tasks, jobs) if not whole_run else [[t] for t in tasks]

        def batch_done(batch, outcome, worker="local"):
            for task, (res, exc) in zip(batch, outcome, strict=True):
                done(task, res, exc, worker)

        executor = execute(groups, jobs, tmp, batch_done, prog, scheduler=scheduler)
        executor["batches"] = len(groups)
        if not scheduler:
            executor.update(facts="whole run" if whole_run else "per rank", cores=cores)
    return results, failures, executor


def _finish(tmp: str, results, failures, executor: dict, options: dict | None = None) -> None:
    options = options or {"hosts": None, "align": True}
    results.sort(key=lambda r: r[1].rank)
    check_unique_ranks([(task.path, res.rank) for task, res in results])
    if not results:
        said = "; ".join(f"{f['reason']}" for f in failures[:3])
        more = f"; and {len(failures) - 3} more" if len(failures) > 3 else ""
        err = TracekitError(f"no trace could be ingested: every file was left out ({len(failures)}): {said}{more}"
                            if failures else "no trace could be ingested")
        codes = {f.get("exit_code") for f in failures}
        if len(codes) == 1 and None not in codes:  # the files' own error's status (2: none is a readable trace),
            err.exit_code = codes.pop()           # as without --on-error skip
        raise err
    for task, res in results:
        rank = res.rank
        if rank < 0:
            raise RankError(f"{task.path}: rank {rank} is negative")
        dest = rank_dir(tmp, rank)
        os.makedirs(dest)
        for i, written in enumerate(res.parts):
            os.replace(written, os.path.join(dest, f"part-{i}.parquet"))
        if os.path.isdir(part_facts_dir(task.part)):
            place_facts(part_facts_dir(task.part), tmp, res.facts_label or rank, FACTS,
                        REDUCED + [CLOCKS] + FINISHED)
    os.rmdir(os.path.dirname(staging_part(tmp, 0)))
    timings = executor.setdefault("timings", {})
    start = time.perf_counter()
    if pack_events(tmp, executor.get("cores")):  # many small ranks: their events in few files
        timings["pack_s"] = round(time.perf_counter() - start, 3)
    traces = [res.trace for _, res in results]
    assign_hosts(traces, options["hosts"])
    pgs = [pg for _, res in results for pg in res.process_groups]
    write_run_table(rows_table(traces, TRACES_SCHEMA), table_path(tmp, "traces"))
    write_run_table(rows_table(pgs, PG_SCHEMA), table_path(tmp, "process_groups"))
    if executor.get("facts") == "whole run":
        try:
            derive_run(tmp, threads=executor.get("cores", 1), align=options["align"],
                       timings=executor.setdefault("timings", {}))
        except TracekitError:  # name the file whose facts fail: derive rank by rank, as a large run does
            shutil.rmtree(os.path.join(tmp, FACTS_DIR), ignore_errors=True)
            for _, res in results:
                one = rank_facts_scratch(tmp, res.rank)
                derive_rank(rank_parts(tmp, res.rank), res.rank, res.trace, res.process_groups, one)
                place_facts(one, tmp, res.rank, FACTS)
    reduce_run(tmp, align=options["align"], timings=timings)
    left_out = [{k: v for k, v in f.items() if k != "exit_code"} for f in failures]  # (the status: for the error)
    write_run_manifest(tmp, [input_entry(r.trace, r.stat, r.worker) for _, r in results], left_out, executor, options)


def input_entry(trace: dict, stat: dict | None, worker: str) -> dict:
    """One input of the manifest: a trace's path, size, hash, stat when read, rank, where it was parsed."""
    return {"path": trace["path"], "bytes": trace["file_bytes"], "sha256": trace["sha256"], "stat": stat,
            "rank": trace["rank"], "rank_source": trace["rank_source"], "events": trace["event_count"],
            "worker": worker}


def write_run_manifest(tmp: str, inputs: list[dict], failures: list[dict], executor: dict, options: dict) -> None:
    """The version's manifest.json, written last: what makes ``tmp`` a complete version."""
    write_manifest(tmp, {
        "format": RUN_FORMAT,
        "schema_version": SCHEMA_VERSION,
        "facts_key": facts_key(),
        "tracekit_version": __version__,
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "executor": executor,
        "inputs": inputs,
        "failures": failures,
        "options": options,
    })
