"""The run cache: trace files or directories opened directly (``tracekit report traces/ summary``) are
ingested into ``~/.cache/tracekit`` (or ``$TRACEKIT_CACHE``) and reused while the inputs are unchanged.

The cache keeps at most ``$TRACEKIT_CACHE_MAX_MB`` (default 4096) megabytes: after each new entry the
least recently used runs are removed until it fits (the one just used always stays).
``tracekit cache list`` shows it, ``tracekit cache clear`` empties it. Only runs the cache made are
listed or removed: named ``run-`` and 16 hex digits, and carrying tracekit's marker (layout.versions.owned);
anything else in the folder (a user's ``run-1/``, a link to a user's run under a cache name) is never
touched, and nothing is written through such a link.
"""

from __future__ import annotations

import hashlib
import os
import re
import time

from . import settings
from .errors import TracekitError
from .layout.manifest import read_manifest
from .layout.versions import current_version, foreign_link, in_use, last_used, owned, remove_run
from .layout.versions import touch as _touch


def root() -> str:
    return settings.cache_dir()


def dir_for(paths: list[str]) -> str:
    key = hashlib.sha256("\0".join(sorted(os.path.abspath(p) for p in paths)).encode()).hexdigest()[:16]
    return os.path.join(root(), f"run-{key}")


def dir_for_url(url: str) -> str:
    """The cache's copy of the run at an object store's ``url`` (layout/remote.py): a run of the cache's
    own, under the cache's rules (its cap, list, clear)."""
    key = hashlib.sha256(("url\0" + url).encode()).hexdigest()[:16]
    return os.path.join(root(), f"run-{key}")


def own_dir_for(paths: list[str]) -> str:
    """``dir_for``, refused where that name holds a symbolic link tracekit did not make (planted in a shared
    cache folder, it would have the fill write into whatever it points to)."""
    out = dir_for(paths)
    if foreign_link(out):
        raise TracekitError(f"{out}: a symbolic link in tracekit's cache that tracekit did not make (it points "
                            f"to {os.path.realpath(out)}); nothing was written through it. Look at what it "
                            "points to and remove it (rm on the link removes only the link)")
    return out


_NAME = re.compile(r"^run-[0-9a-f]{16}$")  # what dir_for names


def _runs() -> list[str]:
    """The cache's own runs: its names, tracekit's marker (never a user's folder that merely looks alike)."""
    base = root()
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    return [os.path.join(base, n) for n in names if _NAME.match(n) and owned(os.path.join(base, n))]


def _size(d: str) -> int:
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs
               if not os.path.islink(os.path.join(r, f)))


def _last_used(d: str) -> float:
    """When the cached run ``d`` was last opened: its writer lock's time (touched on every open; no data of
    the run is written), else the run's own."""
    return last_used(d)


def entries() -> list[dict]:
    """The cached runs, most recently used first: path, inputs, size, last use."""
    out = []
    for d in _runs():
        inputs = [i["path"] for i in (read_manifest(current_version(d) or os.path.realpath(d)) or {}).get("inputs", [])]
        out.append({"run": d, "inputs": len(inputs), "first_input": inputs[0] if inputs else None,
                    "mb": round(_size(os.path.realpath(d)) / 1e6, 3),
                    "last_used": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(_last_used(d)))})
    return sorted(out, key=lambda e: e["last_used"], reverse=True)


def touch(run_dir: str) -> None:
    """Mark the cached run ``run_dir`` as used now, for the least-recently-used eviction: its writer lock's
    time, never a data file of the run."""
    _touch(run_dir)


FILL_WAIT_S = 1800  # how long a process opening traces waits for another process filling their cache run


def enforce_cap(keep: str) -> list[str]:
    """Remove least recently used runs until the cache fits its cap; never ``keep``. Returns the removed."""
    cap = settings.cache_max_bytes()
    runs = _runs()
    sizes = {d: _size(os.path.realpath(d)) for d in runs}
    total = sum(sizes.values())
    removed = []
    for d in sorted(runs, key=_last_used):
        if total <= cap:
            break
        if os.path.abspath(d) == os.path.abspath(keep) or in_use(d):  # never a run being written or read
            continue
        if remove_run(d):
            total -= sizes[d]
            removed.append(d)
    return removed


def clear() -> tuple[int, int]:
    """Remove every cached run that no process is writing or reading; returns (removed, left in use)."""
    n = busy = 0
    for d in _runs():
        if not in_use(d) and remove_run(d):
            n += 1
        else:
            busy += 1
    return n, busy
