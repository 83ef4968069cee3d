"""The writers of a run in an object store (``s3://bucket/prefix``; layout/remote.py says the layout): an
ingest, a reduce and a rank's part, each built locally by the code that builds a run directory, then
uploaded, with the one PUT that makes it visible last."""

from __future__ import annotations

import os

from ..errors import RunError, TracekitError
from ..layout import remote
from ..layout.objstore import Store
from ..layout.versions import current_version


def ingest_to_store(paths, url: str, *, force: bool = False, scheduler: str | None = None,
                    iteration: int | None = None, hosts=None, align: bool = True, **options) -> bool:
    """``tracekit ingest PATHS -o s3://...``: False where the store's live version holds exactly these inputs."""
    from ..discover import find_traces, pick_iteration
    from ..hosts import parse_hosts_option
    from .run_writer import ingest_run, is_up_to_date

    if scheduler not in (None, "local"):
        raise TracekitError(f"{url}: a run in an object store is built on this machine, then uploaded: ingest with "
                            "--scheduler local (or none), or give the Dask workers a shared directory as -o")
    files = pick_iteration(find_traces(list(paths)), iteration)  # (a bad input is said before the store is asked)
    store = Store(url)
    remote.prepare(store)
    with remote.scratch("upload") as tmp:
        name = remote.current(store)
        if not force and name:
            seen = os.path.join(tmp, "seen")
            os.makedirs(seen)
            data = store.read(f"versions/{name}/manifest.json")
            if data:
                with open(os.path.join(seen, "manifest.json"), "wb") as f:
                    f.write(data)
                if is_up_to_date(seen, files, {"hosts": parse_hosts_option(hosts), "align": bool(align)}):
                    return False
        local = os.path.join(tmp, "run")
        ingest_run(paths, local, force=True, scheduler=scheduler, iteration=iteration, hosts=hosts, align=align,
                   **options)
        version = current_version(local)
        remote.publish(store, version)
        remote.seed(store.url, version)
    return True


def reduce_in_store(url: str, iteration: int | None = None, hosts=None, align: bool = True) -> dict:
    """``tracekit ingest --reduce s3://...``: the parts of the cycle fetched, reduced here, published."""
    from .reduce_parts import _pick_cycle, reduce_parts

    store = Store(url, RunError)
    store.check()
    found = remote.list_parts(store)
    cycle = _pick_cycle(url, url, found, iteration)
    with remote.scratch("reduce") as tmp:
        local = os.path.join(tmp, "run")
        fetched = remote.download_parts(store, found[cycle], local)
        done = reduce_parts(local, iteration=cycle, hosts=hosts, align=align)
        remote.prepare(store)
        version = current_version(local)
        done["published"] = remote.publish(store, version)
        done["fetched_bytes"] = fetched
        remote.seed(store.url, version)
    return done


def part_in_store(trace: str, url: str, iteration: int | None = None, threads: int = 1) -> str:
    """A rank's part made here, then uploaded into ``url``'s parts (part.json last); its URL."""
    from .rank_part import make_part

    store = Store(url)
    remote.prepare(store)
    with remote.scratch("part") as tmp:
        local = os.path.join(tmp, "run")
        part = make_part(trace, local, iteration, threads)
        rel = os.path.relpath(part, local).replace(os.sep, "/")
        remote.upload_part(store, part, rel)
    return f"{store.url}/{rel}"
