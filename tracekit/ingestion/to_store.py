"""An ingest into a run in an object store (``tracekit ingest TRACES -o s3://bucket/prefix``; layout/remote.py
says the layout): built locally by the ingest of a run directory, then uploaded, CURRENT's PUT last. (A rank's
part: rank_part.py; a reduce: reduce_parts.py.)"""

from __future__ import annotations

import os

from ..errors import TracekitError
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
    with remote.said_when_interrupted(store), remote.scratch("upload") as tmp:
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
