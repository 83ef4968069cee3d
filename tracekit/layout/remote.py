"""A run in an object store (``s3://bucket/prefix``): the layout of a run directory (paths.py), with what a
store gives in place of renames and locks. Writers build locally and upload; the one PUT that makes the
result visible comes last. Readers fetch the live version into tracekit's cache and read it there.

    s3://bucket/prefix/
        tracekit-run.json               (tracekit's marker; a prefix holding anything else is never written)
        CURRENT                         (the live version's name: one PUT, after the version is whole)
        versions/v-NS-PID/...           (uploaded before CURRENT names it; its manifest.json last)
        parts/iteration_S/rank-R/...    (a rank's part: its files, then part.json: without it, no part)

- An ingest (``-o s3://...``) or a reduce builds the version in a local scratch run as it would build any
  run, uploads it, then PUTs CURRENT; killed at any moment it leaves CURRENT naming the earlier version
  (objects of the unfinished one are never read; a later writer removes them once an hour old). It then
  removes the version it replaced.
- The handler's part is made locally, then uploaded: its old part.json removed first, the part's files,
  part.json last. A reduce reads a part only through its part.json (and again after its files: a part
  replaced meanwhile is read again).
- A reader reads CURRENT (one GET), and where the cache does not hold that version yet, downloads it into
  the cache's run for this URL (``run-HASH``: the cache's size cap, list and clear apply) under that run's
  writer lock, its manifest last, and opens it there: its tables and facts at once, its events (most of its
  bytes) when a query first needs them (``fetch_events``; the version notes where they are meanwhile).
- Two writers at once: no lock holds them apart (the store has none); each publishes a whole version and
  the last CURRENT written wins. Readers never see a mix.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time

from ..errors import RunError, TracekitError
from .objstore import Store
from .paths import (
    CURRENT,
    EVENTS_DIR,
    MANIFEST,
    MARKER,
    MARKER_FORMAT,
    PART_FILE,
    PARTS_DIR,
    VERSIONS_DIR,
    is_version_name,
)

EVENTS_PENDING = "events-in-store.json"  # in a fetched version: its events are still in the store (where, which)
STALE_S = 3600  # a version no CURRENT names, this old (by its name's time): a killed writer's, removed
_PART_TOP = (PARTS_DIR,)


def current(store: Store) -> str | None:
    """The live version's name in the store, or None."""
    data = store.read(CURRENT)
    name = data.decode("utf-8", "replace").strip() if data else ""
    return name if is_version_name(name) else None


def prepare(store: Store) -> None:
    """A writer's first step: the bucket is there, and the prefix is a tracekit run (its marker) or holds
    nothing but ranks' parts; the marker is written where missing."""
    store.check()
    doc = _json(store.read(MARKER))
    if isinstance(doc, dict) and doc.get("format") == MARKER_FORMAT:
        return
    others = [e for e in store.entries() if e not in (PARTS_DIR, MARKER)]
    if others:
        raise TracekitError(f"{store.url}: holds objects that are not a tracekit run ({', '.join(others[:3])}); "
                            "choose another prefix (or remove those objects yourself)")
    import uuid

    store.write(MARKER, (json.dumps({"format": MARKER_FORMAT, "id": uuid.uuid4().hex}) + "\n").encode())


def publish(store: Store, version: str) -> dict:
    """Upload the complete local version ``version`` (RUN/versions/v-NS-PID) and make it the live one:
    its files, its manifest, then CURRENT in one PUT. Removes what it replaced. {"bytes", "seconds"}."""
    start = time.perf_counter()
    name = os.path.basename(version)
    replaced = current(store)
    sent = store.upload_tree(version, f"{VERSIONS_DIR}/{name}", last=MANIFEST)
    store.write(CURRENT, (name + "\n").encode())
    for old in store.entries(VERSIONS_DIR):
        if old != name and (old == replaced or _age_s(old) > STALE_S):
            store.delete(f"{VERSIONS_DIR}/{old}")
    return {"bytes": sent, "seconds": time.perf_counter() - start}


@contextlib.contextmanager
def said_when_interrupted(store: Store):
    """Ctrl-C (or SIGTERM) while a version is built or uploaded: the message names the store's run and
    what it holds (the local scratch it was built in is gone)."""
    from ..errors import Interrupted

    before = current(store)
    try:
        yield
    except (KeyboardInterrupt, Interrupted):
        now = current(store)
        raise Interrupted(store.url, now is not None and now != before, before is not None) from None


def _age_s(name: str) -> float:
    try:
        return time.time() - int(name.split("-")[1]) / 1e9
    except (IndexError, ValueError):
        return 0.0


def _json(data: bytes | None):
    try:
        return json.loads(data) if data else None
    except ValueError:
        return None


@contextlib.contextmanager
def scratch(prefix: str):
    """A local directory to build in (the cache's folder: a version built there moves into the cache's
    copy of the run by a rename), removed after."""
    from .. import settings

    base = settings.cache_dir()
    os.makedirs(base, exist_ok=True)
    d = tempfile.mkdtemp(prefix=f".{prefix}-", dir=base)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


# --- reading ---------------------------------------------------------------------------------------------


def fetch(url: str) -> tuple[str, dict]:
    """The local copy of the run at ``url`` (the cache's run for this URL) holding the store's live
    version: (its directory, {"bytes": fetched, "files": fetched, "seconds"}; nothing fetched where the
    cache held that version already)."""
    from .. import cache
    from .paths import current_name, is_version, version_path

    start = time.perf_counter()
    store = Store(url, RunError)
    store.check()
    local = cache.dir_for_url(store.url)
    for _ in range(5):
        name = current(store)
        if name is None:
            if store.entries(PARTS_DIR):
                raise RunError(f"{url}: holds ranks' parts (trace_handler(DIR, run=RUN)) but no run built from them "
                               f"yet; build it with `tracekit ingest --reduce {url}`")
            raise RunError(f"{url}: not a tracekit run (no {CURRENT} there); create one with "
                           f"`tracekit ingest TRACES -o {url}`")
        got = {"bytes": 0, "files": 0}
        if not (current_name(local) == name and is_version(version_path(local, name))):
            try:
                got = _fill(store, name, local)
            except FileNotFoundError:  # the version was replaced (and removed) while it was fetched: again
                continue
        cache.touch(local)
        cache.enforce_cap(keep=local)
        return local, dict(got, seconds=time.perf_counter() - start)
    raise RunError(f"{url}: its live version kept changing while it was fetched; try again")


def _fill(store: Store, name: str, local: str) -> dict:
    """Download version ``name`` into the cache's run ``local`` and switch it in, under its writer lock."""
    from .. import cache
    from .paths import current_name, is_version, version_path
    from .versions import collect, switch, writer_lock

    with writer_lock(local, wait_s=cache.FILL_WAIT_S):
        target = version_path(local, name)
        if current_name(local) == name and is_version(target):
            return {"bytes": 0, "files": 0}  # (another process fetched it meanwhile)
        collect(local)  # (an earlier fetch cut short: its half version, never current)
        shutil.rmtree(target, ignore_errors=True)
        rel = f"{VERSIONS_DIR}/{name}"
        files = [p[len(rel) + 1:] for p in store.files(rel)]
        if MANIFEST not in files:
            raise FileNotFoundError(name)
        os.makedirs(os.path.join(target, EVENTS_DIR))
        events = [f for f in sorted(files) if f.startswith(EVENTS_DIR + "/")]
        names = [f for f in sorted(files) if f != MANIFEST and f not in events]
        got = store.download(names, rel, target)
        if events:  # fetched when a query first needs them (fetch_events): most reports read the facts alone
            with open(os.path.join(target, EVENTS_PENDING), "w") as f:
                json.dump({"url": store.url, "version": name, "files": events}, f)
        got += store.download([MANIFEST], rel, target)
        switch(target, local)
        collect(local)
    return {"bytes": got, "files": len(names) + 1}


def fetch_events(version: str, named: str) -> dict | None:
    """The events of a version fetched from an object store without them (``_fill``), fetched now, under the
    cache run's writer lock: {"bytes", "files", "seconds"}, or None where they are here already."""
    from .. import cache
    from .versions import run_of, writer_lock

    pending = os.path.join(version, EVENTS_PENDING)
    if not os.path.exists(pending):
        return None
    start = time.perf_counter()
    with writer_lock(run_of(version), wait_s=cache.FILL_WAIT_S):
        doc = _json(_read_local(pending))
        if not isinstance(doc, dict):
            return None  # (another process fetched them meanwhile)
        store = Store(doc["url"], RunError)
        try:
            got = store.download(doc["files"], f"{VERSIONS_DIR}/{doc['version']}", version)
        except FileNotFoundError:
            raise RunError(f"{named}: the version it opened ({doc['version']}) was replaced in the object store before "
                           "its events were fetched; open it again (the live version is fetched then)") from None
        os.remove(pending)
    return {"bytes": got, "files": len(doc["files"]), "seconds": time.perf_counter() - start}


def _read_local(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def seed(url: str, version: str) -> None:
    """Move a version just published from ``url`` into the cache's copy of that run (its reader then
    downloads nothing)."""
    from .. import cache
    from .paths import version_path
    from .versions import collect, switch, writer_lock

    local = cache.dir_for_url(url.rstrip("/"))
    with contextlib.suppress(OSError, TracekitError), writer_lock(local, wait_s=cache.FILL_WAIT_S):
        collect(local)
        os.makedirs(os.path.dirname(version_path(local, "x")), exist_ok=True)
        os.rename(version, version_path(local, os.path.basename(version)))
        switch(version_path(local, os.path.basename(version)), local)
        collect(local)


# --- rank parts --------------------------------------------------------------------------------------------


def upload_part(store: Store, part: str, rel: str) -> None:
    """A rank part made locally (``part``) into ``rel`` (parts/iteration_S/rank-R): the part there before
    loses its part.json first (no longer a part), then its files; the new files, then part.json."""
    store.delete_file(f"{rel}/{PART_FILE}")
    store.delete(rel)
    store.upload_tree(part, rel, last=PART_FILE)


def list_parts(store: Store) -> dict[int | None, dict[int, str]]:
    """The complete parts in the store: {iteration (None: no cycle): {rank: its path in the run}}."""
    from .paths import _CYCLE_NAME, _PART_NAME

    out: dict[int | None, dict[int, str]] = {}
    for path in store.files(PARTS_DIR):
        bits = path.split("/")
        if bits[-1] != PART_FILE or len(bits) not in (3, 4):
            continue
        cycle = None
        if len(bits) == 4:
            if not (m := _CYCLE_NAME.match(bits[1])):
                continue
            cycle = int(m.group(1))
        if m := _PART_NAME.match(bits[-2]):
            out.setdefault(cycle, {})[int(m.group(1))] = "/".join(bits[:-1])
    return out


def download_parts(store: Store, parts: dict[int, str], local_run: str) -> int:
    """The parts ``{rank: path}`` into the local run ``local_run`` at the same paths; bytes fetched. A part
    whose part.json changed while its files came (replaced meanwhile) is fetched again."""
    from .objstore import _each

    listing = store.files(PARTS_DIR)

    def one(rel: str) -> int:
        found = listing
        for attempt in range(5):
            if attempt:
                found = store.files(rel)
            before = store.read(f"{rel}/{PART_FILE}")
            names = [p[len(rel) + 1:] for p in found if p.startswith(rel + "/") and not p.endswith("/" + PART_FILE)]
            dest = os.path.join(local_run, *rel.split("/"))
            shutil.rmtree(dest, ignore_errors=True)
            try:
                n = store.download(names, rel, dest)
            except FileNotFoundError:
                n = None
            if before is not None and n is not None and store.read(f"{rel}/{PART_FILE}") == before:
                with open(os.path.join(dest, PART_FILE), "wb") as f:
                    f.write(before)
                return n + len(before)
        raise RunError(f"{store.url}/{rel}: the part kept changing while it was fetched; reduce again")

    return sum(_each(one, sorted(parts.values())))
