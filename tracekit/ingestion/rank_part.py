"""One rank's part of a run, made where the rank was traced: its trace parsed into events and its per-rank
facts derived (the files an ingest's map writes for it), into ``RUN/parts/iteration_S/rank-R/``, complete or
absent. ``tracekit ingest --reduce RUN`` (reduce_parts.py) then builds the run from the parts present.

The part is built in a scratch directory of its own inside ``RUN/parts/`` (held by a lock while it is
built: a reduce removes only scratch that no living writer holds) and renamed into place whole, so a process
killed at any moment leaves no half part. tracekit.profiler.trace_handler(DIR, run=RUN) runs this module in a
process of its own, beside the training, which begins once the machine has a core to spare or the training
lets it go (part_gate.py):

    python -m tracekit.ingestion.rank_part TRACE RUN [--iteration S] [--nice N] [--wait-for-core]
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import uuid

import msgspec

from .. import __version__
from ..discover import iterations_of
from ..errors import TracekitError
from ..layout.objstore import is_store_url
from ..layout.paths import (
    MARKER,
    PART_EVENTS,
    PART_FACTS,
    PART_FILE,
    PART_FINISH,
    PARTS_DIR,
    WRITER_LOCK,
    has_marker,
    is_run,
    part_path,
    parts_dir,
    refuse_url,
)
from .part_doc import PART_FORMAT, locked_scratch, put_in_place, read_part  # noqa: F401 (read_part: callers' name)

MARKER_READS = 5  # a run's marker that cannot be read is read this many times before the run is refused


def make_part(trace: str, run: str, iteration: int | None = None, threads: int = 1, group: bool = True) -> str:
    """Parse ``trace`` and derive its rank's facts into run ``run``'s parts; returns the part's directory.
    ``iteration``: the profiling cycle (default: the trace's iteration_N directory, as the handler names it).
    A part of the same rank and cycle already there is replaced (the same job profiled again). ``group``:
    where this part completes its group of ranks, join the group's tables for the reduce (part_groups.py)."""
    from ..derive import derive_rank
    from ..rules import FACTS, part_key
    from ..run_tables import SCHEMA_VERSION
    from .one_file import ingest_file, release_memory
    from .part_tables import write_tables

    if is_store_url(run):  # made here, then uploaded, part.json last (layout/remote.py)
        return _part_in_store(trace, run, iteration, threads)
    refuse_url(run)
    run = os.path.abspath(run)
    trace = os.path.abspath(trace)
    if iteration is None:
        cycles = iterations_of([trace])
        iteration = next(iter(cycles), None)
    _prepare(run)
    tag = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    with locked_scratch(run, tag) as scratch:
        os.mkdir(os.path.join(scratch, PART_EVENTS))
        res = ingest_file(trace, os.path.join(scratch, PART_EVENTS, "part-0.parquet"), single=False, threads=threads)
        release_memory()
        finish = derive_rank(res.parts, res.rank, res.trace, res.process_groups, os.path.join(scratch, PART_FACTS),
                             threads=threads, finish_dir=os.path.join(scratch, PART_FINISH))
        doc = {"format": PART_FORMAT, "schema_version": SCHEMA_VERSION, "facts_key": part_key(),
               "tracekit_version": __version__, "iteration": iteration, "rank": res.rank,
               "events": [os.path.basename(p) for p in res.parts],
               "events_bytes": [os.path.getsize(p) for p in res.parts], "finish": finish,
               "tables": write_tables(scratch, FACTS, finish) or {}, "stat": res.stat,
               "trace": res.trace, "process_groups": res.process_groups}
        with open(os.path.join(scratch, PART_FILE), "wb") as f:
            f.write(msgspec.json.encode(doc))
            f.flush()
            os.fsync(f.fileno())
        dest = part_path(run, res.rank, iteration)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        put_in_place(run, scratch, dest, tag)  # (the same rank and cycle again: the new part replaces it whole)
    if group:
        _join_group(run, dest, res.rank, res.trace.get("world_size"), doc["facts_key"])
    return dest


def _join_group(run: str, part: str, rank: int, world: int | None, key: str) -> None:
    """The group this part completes, joined (part_groups.py); where it cannot be (its disk, a part of it
    removed meanwhile), one line says so and the reduce joins those parts itself: the part is made."""
    from .part_groups import make_group

    try:
        make_group(run, part, rank, world, key)
    except Exception as exc:  # noqa: BLE001 (an optimization of the reduce: never the part's failure)
        text = str(exc)
        if isinstance(exc, OSError) and exc.strerror:
            text = exc.strerror + (f" ({exc.filename})" if exc.filename else "")
        why = (text.splitlines() or [type(exc).__name__])[0]
        print(f"tracekit: the ranks' group of {part} was not joined ({why}); the reduce joins its parts itself",
              file=sys.stderr)


def _part_in_store(trace: str, url: str, iteration: int | None, threads: int) -> str:
    """A rank's part of a run in an object store: made here in a scratch run, then uploaded into the store's
    parts, part.json last (layout/remote.py); its URL."""
    from ..layout import remote
    from ..layout.objstore import Store

    store = Store(url)
    remote.prepare(store)
    with remote.scratch("part") as tmp:
        local = os.path.join(tmp, "run")
        part = make_part(trace, local, iteration, threads, group=False)
        rel = os.path.relpath(part, local).replace(os.sep, "/")
        remote.upload_part(store, part, rel)
    return f"{store.url}/{rel}"


def _prepare(run: str) -> None:
    """Make ``run`` (with tracekit's marker) and its parts directory; refuse a directory that holds
    anything but a tracekit run."""
    from ..layout.versions import make_marker

    try:
        os.makedirs(run, exist_ok=True)
    except OSError as exc:
        raise TracekitError(f"cannot write the run {run}: {exc.strerror} ({exc.filename or run}); choose a run "
                            "directory on a writable file system") from None
    for attempt in range(MARKER_READS):
        if has_marker(run):
            break
        # what is there besides what the ranks' part writers make (another one may be writing the marker now)
        others = {e for e in os.listdir(run)
                  if e not in (PARTS_DIR, WRITER_LOCK) and not e.startswith(MARKER + ".tmp-")}
        if MARKER in others and attempt + 1 < MARKER_READS:
            time.sleep(0.05)  # a marker there that could not be read: read it again before refusing
            continue
        if others and not is_run(run):
            raise TracekitError(f"{run}: exists, is not empty and is not a tracekit run; choose another run "
                                "directory for the ranks' parts (or remove that directory yourself)")
        make_marker(run)
        break
    os.makedirs(parts_dir(run), exist_ok=True)


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m tracekit.ingestion.rank_part",
                                 description=" ".join(__doc__.split("\n\n")[0].replace("``", "").split()))
    ap.add_argument("trace", help="the rank's trace file (.json or .json.gz), as its profiler wrote it")
    ap.add_argument("run", help="the run directory (or s3://bucket/prefix) that holds the ranks' parts; "
                                "tracekit ingest --reduce RUN builds the run from them")
    ap.add_argument("--iteration", type=int, default=None,
                    help="the profiling cycle (default: the trace's iteration_N directory, as the handler names it)")
    ap.add_argument("--nice", type=int, default=0, help="lower this process's priority by N (beside training)")
    ap.add_argument("--wait-for-core", action="store_true",
                    help="begin once the machine has a core to spare, or when standard input closes (part_gate.py)")
    args = ap.parse_args(argv)
    if args.nice:
        with contextlib.suppress(OSError):
            os.nice(args.nice)
    if args.wait_for_core:
        from .part_gate import wait_for_a_free_core

        wait_for_a_free_core()
    try:
        make_part(args.trace, args.run, args.iteration)
    except TracekitError as exc:
        print(f"tracekit: the rank part of {args.trace} in {args.run} was not made: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:  # the run's disk (full, read-only, not ours): nothing of the part is left
        print(f"tracekit: the rank part of {args.trace} in {args.run} was not made: {exc.strerror or exc} "
              f"(writing {exc.filename or args.run}); free space or give the handler another run directory",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
