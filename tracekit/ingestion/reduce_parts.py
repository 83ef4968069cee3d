"""The reduce of a run made of rank parts (rank_part.py: each rank's events and per-rank facts, made where it
was traced): a new version of the run from the parts present, with only the cross-rank work done here (clock
alignment, matching, the job-wide facts, the finish), switched in whole as an ingest's is. A part that comes
late is taken in by reducing again; the ranks missing are said (and doctor says them too).

    tracekit ingest --reduce RUN [--iteration N]
"""

from __future__ import annotations

import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq

from ..compact import RANKS_PER_FILE, partition
from ..derive import RANK_FINISH, reduce_run
from ..errors import RunError, TracekitError, disk_error
from ..hosts import assign_hosts, parse_hosts_option
from ..layout.objstore import is_store_url
from ..layout.paths import (
    PART_EVENTS,
    PART_FACTS,
    PART_FINISH,
    list_parts,
    parts_dir,
    rank_dir,
    refuse_url,
    spill_dir,
    table_path,
)
from ..layout.versions import collect, resolve_output, version_dir, writer_lock
from ..rules import FACTS, part_key
from ..run_tables import PG_SCHEMA, TRACES_SCHEMA, rows_table, write_run_table
from .part_doc import link_or_copy, read_part
from .part_groups import GROUPS_FILE, TRACES_FILE, identity, link_group, usable_group
from .part_tables import compact_parts, groups_table
from .run_writer import build_and_switch, cannot_write, input_entry, write_run_manifest


def reduce_parts(run: str, iteration: int | None = None, hosts=None, align: bool = True) -> dict:
    """Build run ``run`` from its rank parts (of cycle ``iteration``, or the only cycle there is). Returns
    {"ranks": [...], "world": N, "missing": [...], "seconds": S}."""
    start = time.perf_counter()
    if is_store_url(run):  # the parts fetched, reduced here, the version published (layout/remote.py)
        return dict(_reduce_in_store(run, iteration, hosts, align), seconds=time.perf_counter() - start)
    refuse_url(run, RunError)
    out = resolve_output(os.path.abspath(run))
    cycle = _pick_cycle(out, run, list_parts(out), iteration)
    hosts = parse_hosts_option(hosts)
    with writer_lock(out, instead="then reduce again (a part written meanwhile is taken in)"):
        collect(out)
        remove_dead_scratch(out)
        parts = list_parts(out).get(cycle, {})  # again, under the lock
        if not parts:
            raise RunError(f"{run}: its rank parts went while the reduce waited; make them again")
        key = part_key()  # what the parts derived (the reduce derives the rest: another tracekit's parts do)
        # each part as the reduce sees it now: a group (part_groups.py) is used only where it joined these
        try:
            seen = {str(r): identity(d) for r, d in parts.items()}
        except OSError:
            raise RunError(f"{run}: a rank part went while the reduce read the parts; run it again") from None
        # a partition whose parts' writers joined it: its part.json read from the group's file
        chunks = partition(sorted(parts), RANKS_PER_FILE)
        groups = {c[0]: usable_group(parts, c, key, FACTS, seen) for c in chunks}
        docs = {}
        for c in chunks:
            docs.update(groups[c[0]]["docs"] if groups[c[0]] else {r: read_part(parts[r], key) for r in c})
        tmp = version_dir(out)
        options = {"hosts": hosts, "align": bool(align)}

        def place():
            for c in chunks:
                for rank in c:
                    _place(parts[rank], docs[rank], tmp, rank)

        def build():
            os.makedirs(tmp)
            for c in chunks:  # first, as the compaction reads them: each part's tables there
                if groups[c[0]] is None:
                    for rank in c:
                        _check_tables(parts[rank], docs[rank])
            # beside the reduce (the file system's calls and pyarrow's reading and writing run outside the GIL):
            # each rank's events placed (4,096 folders made: 0.2 to 0.8 s on this file system, most of it
            # waiting on its journal) and the process_groups table (16.7M ranks read and written again: 0.9 s
            # of CPU), which no cross-rank rule reads; waited for where the finish needs them (below)
            with ThreadPoolExecutor(max_workers=2) as pool:
                placed = pool.submit(place)
                grouped = pool.submit(
                    lambda: write_run_table(_groups_table(chunks, groups, docs), table_path(tmp, "process_groups")))
                write_run_table(_traces_table(chunks, groups, docs, hosts), table_path(tmp, "traces"))
                for doc in docs.values():  # the trace's header, now in the table (88 MB at 4,096 ranks), no longer held
                    doc["trace"].pop("metadata", None)
                executor = {"kind": "rank parts", "iteration": cycle, "timings": {}}
                scratch = spill_dir(tmp, "rank-finish")  # the parts' finish tables, joined for the finish

                def compact():
                    made = compact_parts(tmp, parts, docs, FACTS, RANK_FINISH, scratch, linked=lambda c, have, outs:
                                         link_group(parts, c, FACTS, have, outs, key, seen))
                    if not all(r in made.get(n, ()) for n in RANK_FINISH for r in docs):
                        placed.result()  # the finish derives a rank's lead-ups from its events
                    return made

                reduce_run(tmp, align=options["align"], timings=executor["timings"], compact_with=compact)
                placed.result()  # (an error of the reduce: the pool waits for both before the version goes)
                grouped.result()
            shutil.rmtree(scratch, ignore_errors=True)
            inputs = [input_entry(doc["trace"], doc.get("stat"), doc["trace"].get("host") or "rank part")
                      for doc in docs.values()]
            write_run_manifest(tmp, inputs, [], executor, options)

        try:
            build_and_switch(build, tmp, out)
        except Exception as exc:  # the disk, not the parts: ENOSPC, EROFS, EACCES ... (DuckDB's words too)
            disk = exc if isinstance(exc, OSError) and not isinstance(exc, TimeoutError) else disk_error(exc)
            if disk is None:
                raise
            raise TracekitError(cannot_write(out, disk)) from None
    world = max([doc["trace"].get("world_size") or 0 for doc in docs.values()] + [max(docs) + 1])
    return {"ranks": sorted(docs), "world": world, "missing": sorted(set(range(world)) - set(docs)),
            "seconds": time.perf_counter() - start}


def _traces_table(chunks: list[list[int]], groups: dict, docs: dict, hosts) -> pa.Table:
    """The run's traces table: each partition's rows from its group's file, or from its parts' part.json, in
    rank order; every rank's host then assigned (tracekit.hosts, with the reduce's --hosts)."""
    pieces = []
    for c in chunks:
        g = groups[c[0]]
        pieces.append(pq.ParquetFile(os.path.join(g["dir"], TRACES_FILE)).read() if g
                      else rows_table([docs[r]["trace"] for r in c], TRACES_SCHEMA))
    table = pa.concat_tables([t.cast(TRACES_SCHEMA) for t in pieces])
    light = [{k: docs[r]["trace"].get(k) for k in ("rank", "path", "host", "host_source", "device_properties")}
             for c in chunks for r in c]
    if [t["rank"] for t in light] != table.column("rank").to_pylist():
        raise RunError("the rank parts' groups do not hold the ranks their parts do; make the parts again")
    assign_hosts(light, hosts)
    assigned = rows_table([{"host": t["host"], "host_source": t["host_source"]} for t in light],
                          pa.schema([TRACES_SCHEMA.field("host"), TRACES_SCHEMA.field("host_source")]))
    for name in ("host", "host_source"):
        table = table.set_column(TRACES_SCHEMA.get_field_index(name), TRACES_SCHEMA.field(name), assigned.column(name))
    return table


def _groups_table(chunks: list[list[int]], groups: dict, docs: dict) -> pa.Table:
    """The run's process_groups table: each partition's rows from its group's file, or from its parts'
    part.json (JSON text, dropped once read: read_part), in rank order."""
    pieces = []
    for c in chunks:
        g = groups[c[0]]
        pieces.append(pq.ParquetFile(os.path.join(g["dir"], GROUPS_FILE)).read() if g
                      else groups_table([pg for r in c for pg in docs[r].pop("process_groups")]))
    return pa.concat_tables([t.cast(PG_SCHEMA) for t in pieces])


def _reduce_in_store(url: str, iteration: int | None, hosts, align: bool) -> dict:
    """The reduce of a run in an object store: the cycle's parts fetched into a local scratch run, reduced
    there as any run's, the version uploaded and published by CURRENT's PUT last (layout/remote.py)."""
    from ..layout import remote
    from ..layout.objstore import Store
    from ..layout.versions import current_version

    store = Store(url, RunError)
    store.check()
    found = remote.list_parts(store)
    cycle = _pick_cycle(url, url, found, iteration)
    with remote.said_when_interrupted(store), remote.scratch("reduce") as tmp:
        local = os.path.join(tmp, "run")
        fetched = remote.download_parts(store, found[cycle], local)
        done = reduce_parts(local, iteration=cycle, hosts=hosts, align=align)
        remote.prepare(store)
        version = current_version(local)
        done["published"] = remote.publish(store, version)
        done["fetched_bytes"] = fetched
        remote.seed(store.url, version)
    return done


def _pick_cycle(out: str, named: str, found: dict, iteration: int | None):
    shown = ", ".join(f"iteration_{c} ({len(p)} ranks)" if c is not None else f"no cycle ({len(p)} ranks)"
                      for c, p in sorted(found.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)))
    if not found:
        raise RunError(f"{named}: no rank parts in {parts_dir(out)}; tracekit.profiler.trace_handler(DIR, run=RUN) "
                       "makes one per rank as it writes the trace (or ingest the traces: tracekit ingest TRACES -o "
                       "RUN)")
    if iteration is not None:
        if iteration not in found:
            raise RunError(f"{named}: no rank parts of iteration_{iteration}; there are {shown}")
        return iteration
    if len(found) > 1:
        raise RunError(f"{named}: rank parts of {len(found)} profiling cycles: {shown}. A run is one cycle: "
                       f"reduce one with `tracekit ingest --reduce {named} --iteration N`")
    return next(iter(found))


def _place(part: str, doc: dict, tmp: str, rank: int) -> None:
    """A part's events in the version's layout, hard-linked (the part stays, for a later reduce; no copy),
    each file at the size its writer wrote (part.json's events_bytes, where the part says it): the reduce
    reads no events, so a file cut short or emptied since would be found only by a report, after the run
    it replaced was gone."""
    dest = rank_dir(tmp, rank)
    os.makedirs(dest)
    sizes = doc.get("events_bytes") or [None] * len(doc["events"])
    for i, (name, size) in enumerate(zip(doc["events"], sizes, strict=True)):
        src = os.path.join(part, PART_EVENTS, name)
        _link(src, os.path.join(dest, f"part-{i}.parquet"), doc)
        if size is not None and os.path.getsize(src) != size:
            raise RunError(f"{part}: a rank part whose {src} is {os.path.getsize(src):,} bytes, written with "
                                f"{size:,}: it was changed since; {_remake(doc)}") from None


def _check_tables(part: str, doc: dict) -> None:
    """Each of a part's tables is there (its facts, and the finish tables part.json says it derived): the
    compaction reads them where they are, never linked one by one (a part whose group holds its tables
    is not looked at for them)."""
    names = set(os.listdir(os.path.join(part, PART_FACTS))) if os.path.isdir(os.path.join(part, PART_FACTS)) else set()
    for name in FACTS:
        if name + ".parquet" not in names:
            _missing(os.path.join(part, PART_FACTS, name + ".parquet"), doc)
    for name in doc.get("finish") or ():  # what part.json says the part derived of the finish
        if not os.path.isfile(os.path.join(part, PART_FINISH, name + ".parquet")):
            _missing(os.path.join(part, PART_FINISH, name + ".parquet"), doc)


def _link(src: str, dst: str, doc: dict) -> None:
    try:
        link_or_copy(src, dst)
    except FileNotFoundError:
        _missing(src, doc)


def _missing(src: str, doc: dict):
    raise RunError(f"{os.path.dirname(os.path.dirname(src))}: a rank part without {src}; {_remake(doc)}") from None


def _remake(doc: dict) -> str:
    """What makes a part again: its trace, as part.json names it."""
    trace = (doc.get("trace") or {}).get("path") or "TRACE"
    return f"make it again from its trace (python -m tracekit.ingestion.rank_part {trace} RUN), or remove it"


def remove_dead_scratch(out: str) -> None:
    """What a rank part's writer killed mid-part left (its scratch, no longer held by a lock), under the
    writer lock; scratch that a living writer holds stays."""
    from ..layout.versions import lock_exclusive

    d = parts_dir(out)
    for e in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if not e.startswith(".tmp-"):
            continue
        try:
            fd = lock_exclusive(os.path.join(d, e))
        except BlockingIOError:
            continue
        if fd is not None:
            os.close(fd)
            shutil.rmtree(os.path.join(d, e), ignore_errors=True)
