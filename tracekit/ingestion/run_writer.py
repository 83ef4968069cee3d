"""Ingest many trace files into one run directory, atomically.

The run is built in a sibling temporary directory and renamed into place at the end, so a crash or
Ctrl-C never leaves a half-written run and an earlier run stays intact until the new one is whole.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import shutil
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

import pyarrow.parquet as pq

from .. import __version__, settings
from ..discover import check_unique_ranks, find_traces, match_rank_options, pick_iteration, rank_from_name
from ..errors import RankError, TracekitError, disk_error
from ..hosts import assign_hosts, parse_hosts_option
from ..derive import FACTS_DIR, derive_rank, derive_ranks, derive_run, facts_key, place_facts, rank_parts, reduce_run
from .guard import recover, resolve_output, switch, version_dir, writer_lock
from .one_file import MAX_WRITERS, ingest_file, part_paths, release_memory
from .progress import IngestProgress, make_sink, worker_init
from .schema import PG_SCHEMA, SCHEMA_VERSION, TRACES_SCHEMA, rows_table
from .source import same_stat, stat_now

MANIFEST = "manifest.json"


def sha256_of(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def read_manifest(run_dir: str) -> dict | None:
    try:
        with open(os.path.join(run_dir, MANIFEST)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


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


def _batch_task(batch):
    """Several input files: each parsed into its events part, then their ranks' facts derived together on
    one connection (derive_ranks), beside the first file's part. -> [(result, None) or (None, error)] in the
    batch's order; a file that fails is left out of the others' facts (a failing batch derive is redone rank
    by rank, so that the error names its file)."""
    if len(batch) == 1:
        try:
            return [(_task(batch[0]), None)]
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
        derive_ranks(items, _facts_dir(batch[ok[0][0]][1]), threads=batch[0][4])
        ranks = [r for _, r, _, _ in items]
        ok[0][1]["facts_label"] = f"{min(ranks)}-{max(ranks)}"
    except TracekitError:
        shutil.rmtree(_facts_dir(batch[ok[0][0]][1]), ignore_errors=True)
        for i, res in ok:
            try:
                derive_rank(res["parts"], res["trace"]["rank"], res["trace"], res["process_groups"],
                            _facts_dir(batch[i][1]), threads=batch[i][4])
            except TracekitError as exc:
                out[i] = (None, exc)
    return out


def _facts_dir(part: str) -> str:
    return part[:-len(".parquet")] + "-facts"


def batches(tasks: list, jobs: int) -> list[list]:
    """Small files in batches (derive_ranks), enough batches to keep every worker busy: up to BATCH_FILES
    files of BATCH_BYTES in all, in rank order where the names give ranks (a batch's facts then hold
    neighbouring ranks). Files alone in the run, or past the size, stay one per task."""
    if len(tasks) <= 2 * jobs:
        return [[t] for t in tasks]
    per = max(1, min(BATCH_FILES, len(tasks) // (2 * jobs)))
    ordered = sorted(tasks, key=lambda t: (rank_from_name(t[0]) is None, rank_from_name(t[0]) or 0, t[0]))
    out: list[list] = []
    size = 0
    for t in ordered:
        b = _or_none(os.path.getsize, t[0]) or 0
        if not out or len(out[-1]) >= per or size + b > BATCH_BYTES:
            out.append([])
            size = 0
        out[-1].append(t)
        size += b
    return out


BATCH_FILES = 16
BATCH_BYTES = 16 << 20


def _task(args):
    """One input file: parse it into its events part, then derive that rank's facts beside it."""
    path, part, rank, single, threads, derive_here = args
    res = ingest_file(path, part, rank=rank, progress=make_sink(), single=single, threads=threads)
    release_memory()  # what the decoding freed goes back to the system before DuckDB takes its share
    if derive_here:
        r = res["trace"]["rank"]
        derive_rank(res["parts"], r, res["trace"], res["process_groups"], part[:-len(".parquet")] + "-facts",
                    threads=threads, reduced=single)
    return res


# A run of several files smaller than this in all derives its facts once, for every rank together, at
# the end (derive_run): per rank, the fixed cost of a DuckDB connection and of planning the rules (about
# 0.1 s) would be most of the work.
SMALL_RUN_BYTES = 64 << 20


def write_json_atomic(path: str, doc: dict) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
    os.replace(tmp, path)


def ingest_run(paths, out: str, *, jobs: int | None = None, on_error: str = "fail", force: bool = False,
               ranks: dict | None = None, show_progress: bool | None = None, scheduler: str | None = None,
               iteration: int | None = None, hosts=None, align: bool = True) -> bool:
    """Build the run directory ``out`` from ``paths``. Returns False when it was already up to date.

    Each file is one task (parse + that rank's facts): in a local process pool of ``jobs`` processes, or,
    with ``scheduler`` (``tcp://host:port`` of a running ``dask scheduler``, or ``local`` for a
    LocalCluster of ``jobs`` workers), on a Dask cluster. ``hosts``: each rank's host where the traces do
    not say it (tracekit.hosts: a mapping, or N consecutive ranks per host)."""
    if on_error not in ("fail", "skip"):
        raise TracekitError(f"on_error must be 'fail' or 'skip', not {on_error!r}")
    settings.check()  # a bad setting stops here, not in a worker process (where --on-error skip hides it)
    files = pick_iteration(find_traces(list(paths)), iteration)
    out = resolve_output(os.path.abspath(out))  # a user's link to a run: update that run, keep the link
    with writer_lock(out):
        recover(out)
        return _ingest_locked(files, out, jobs, on_error, force, ranks, show_progress, scheduler,
                              {"hosts": hosts, "align": bool(align)})


def _ingest_locked(files, out, jobs, on_error, force, ranks, show_progress, scheduler, options=None) -> bool:
    options = options or {"hosts": None, "align": True}
    options["hosts"] = parse_hosts_option(options["hosts"])  # a bad --hosts fails before any work
    if os.path.exists(out) and not os.path.isdir(out):
        raise TracekitError(f"{out}: exists and is not a directory; choose another -o")
    if os.path.isdir(out) and os.listdir(out) and not os.path.isfile(os.path.join(out, MANIFEST)):
        raise TracekitError(f"{out}: exists, is not empty and is not a tracekit run (no {MANIFEST}); a run "
                            "replaces its directory, so choose another -o (or remove that directory yourself)")
    real = os.path.realpath(out)
    inside = [f for f in files if f.startswith(out + os.sep) or os.path.realpath(f).startswith(real + os.sep)]
    if inside:
        raise TracekitError(f"{inside[0]} is inside the output run {out}, which ingest replaces whole (the input "
                            "would be deleted): choose another -o, or move the traces out first")
    if not force and os.path.isdir(out) and is_up_to_date(out, files, options):
        return False
    given = match_rank_options(ranks or {}, files)
    tmp = version_dir(out)  # built beside the run, switched in whole when complete (see guard.py)
    os.makedirs(os.path.join(tmp, "events", "_parts"))
    switched = False
    try:
        start = time.perf_counter()
        results, failures, executor = _ingest_all(files, tmp, jobs, on_error, given, show_progress, scheduler)
        executor["timings"] = {"map_s": round(time.perf_counter() - start, 3)}  # parse and per-rank facts
        _finish(tmp, results, failures, executor, options)
        switch(tmp, out)
        switched = True
    except Exception as exc:  # the disk, not the input: ENOSPC, EROFS, EACCES, EDQUOT ... (DuckDB's words too)
        disk = exc if isinstance(exc, OSError) and not isinstance(exc, TimeoutError) else disk_error(exc)
        if disk is None:
            raise
        raise TracekitError(cannot_write(out, disk)) from None
    finally:
        if not switched:
            shutil.rmtree(tmp, ignore_errors=True)
    return True


def cannot_write(out: str, exc: OSError) -> str:
    """One line for a write that failed: what failed, where, how much room that file system has left."""
    where = exc.filename or out
    room = ""
    with contextlib.suppress(OSError):  # (the run's versions are built beside it: the same file system)
        d = os.path.dirname(out)
        room = f"; {shutil.disk_usage(d).free / 2**20:,.0f} MB free on the file system of {d}"
    return (f"cannot write the run {out}: {exc.strerror or exc} (writing {where}{room}); nothing was replaced "
            "(an earlier run there is intact). Free space, or choose another -o")


def _ingest_all(files, tmp, jobs, on_error, given, show_progress, scheduler=None):
    cores = max(1, jobs or os.cpu_count() or 1)
    jobs = min(cores, len(files))  # one process per file at a time; cores left over go to threads within a file
    threads = max(1, cores // jobs) if not scheduler or scheduler == "local" else 1  # a remote worker's cores: unknown here
    total = sum(_or_none(os.path.getsize, f) or 0 for f in files)
    whole_run = not scheduler and len(files) > 1 and total <= SMALL_RUN_BYTES
    tasks = [(f, os.path.join(tmp, "events", "_parts", f"part-{i:05d}.parquet"), given.get(f), len(files) == 1,
              threads, not whole_run) for i, f in enumerate(files)]
    results: list[tuple[str, str, dict]] = []
    failures: list[dict] = []
    with IngestProgress(len(files), total, show_progress) as prog:
        def done(task, fut_result=None, exc=None, worker="local"):
            path, part = task[:2]
            if exc is None:
                fut_result["worker"] = worker
                results.append((path, part, fut_result))
            elif isinstance(exc, TracekitError) and on_error == "skip":
                failures.append({"path": path, "bytes": _or_none(os.path.getsize, path),
                                 "stat": _or_none(stat_now, path),  # (before the hash: the file it hashes)
                                 "sha256": _or_none(sha256_of, path), "reason": str(exc)})
                for written in part_paths(part, MAX_WRITERS):
                    if os.path.exists(written):
                        os.remove(written)
                shutil.rmtree(part[:-len(".parquet")] + "-facts", ignore_errors=True)
            else:
                raise exc
            prog.file_done(_or_none(os.path.getsize, path) or 0)

        groups = batches(tasks, jobs) if not whole_run else [[t] for t in tasks]

        def batch_done(batch, outcome, worker="local"):
            for task, (res, exc) in zip(batch, outcome):
                done(task, res, exc, worker)

        if scheduler:
            from .on_dask import run_on_dask
            executor = run_on_dask(groups, scheduler, jobs, tmp, batch_done, prog.poll)
            executor["batches"] = len(groups)
            return results, failures, executor
        executor = {"kind": "process pool", "jobs": jobs, "facts": "whole run" if whole_run else "per rank", "cores": cores,
                    "batches": len(groups)}
        if jobs == 1:
            worker_init(prog.queue)
            for batch in groups:
                batch_done(batch, _batch_task(batch))
                prog.poll()
            return results, failures, executor
        with ProcessPoolExecutor(max_workers=jobs, initializer=worker_init, initargs=(prog.queue,)) as pool:
            pending = {pool.submit(_batch_task, b): b for b in groups}
            try:
                while pending:
                    finished, _ = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                    prog.poll()
                    for fut in finished:
                        batch = pending.pop(fut)
                        exc = fut.exception()
                        if exc is not None:
                            raise exc
                        batch_done(batch, fut.result())
            except BaseException:
                for fut in pending:
                    fut.cancel()
                raise
    return results, failures, executor


def _finish(tmp: str, results, failures, executor: dict, options: dict | None = None) -> None:
    options = options or {"hosts": None, "align": True}
    results.sort(key=lambda r: r[2]["trace"]["rank"])
    check_unique_ranks([(r[0], r[2]["trace"]["rank"]) for r in results])
    if not results:
        raise TracekitError("no trace could be ingested; see the reasons above (or in --on-error skip's list)")
    for path, part, res in results:
        rank = res["trace"]["rank"]
        if rank < 0:
            raise RankError(f"{path}: rank {rank} is negative")
        dest = os.path.join(tmp, "events", f"rank={rank}")
        os.makedirs(dest)
        for i, written in enumerate(res["parts"]):
            os.replace(written, os.path.join(dest, f"part-{i}.parquet"))
        if os.path.isdir(_facts_dir(part)):
            place_facts(_facts_dir(part), tmp, res.get("facts_label", rank))
    os.rmdir(os.path.join(tmp, "events", "_parts"))
    traces = [r[2]["trace"] for r in results]
    assign_hosts(traces, options["hosts"])
    pgs = [pg for r in results for pg in r[2]["process_groups"]]
    pq.write_table(rows_table(traces, TRACES_SCHEMA), os.path.join(tmp, "traces.parquet"))
    pq.write_table(rows_table(pgs, PG_SCHEMA), os.path.join(tmp, "process_groups.parquet"))
    if executor.get("facts") == "whole run":
        try:
            derive_run(tmp, threads=executor.get("cores", 1), align=options["align"],
                       timings=executor.setdefault("timings", {}))
        except TracekitError:  # name the file whose facts fail: derive rank by rank, as a large run does
            shutil.rmtree(os.path.join(tmp, FACTS_DIR), ignore_errors=True)
            for path, _, res in results:
                rank = res["trace"]["rank"]
                one = os.path.join(tmp, f"_facts-{rank}")
                derive_rank(rank_parts(tmp, rank), rank, res["trace"],
                            res["process_groups"], one)
                place_facts(one, tmp, rank)
    timings = executor.setdefault("timings", {})
    reduce_run(tmp, align=options["align"], timings=timings)
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "facts_key": facts_key(),
        "tracekit_version": __version__,
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "executor": executor,
        "inputs": [{"path": r["trace"]["path"], "bytes": r["trace"]["file_bytes"], "sha256": r["trace"]["sha256"],
                    "stat": r.get("stat"),
                    "rank": r["trace"]["rank"], "rank_source": r["trace"]["rank_source"],
                    "events": r["trace"]["event_count"], "worker": r["worker"]} for _, _, r in results],
        "failures": failures,
        "options": options,
    }
    write_json_atomic(os.path.join(tmp, MANIFEST), manifest)
