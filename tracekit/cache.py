"""The run cache: trace files or directories opened directly (``tracekit report traces/ summary``) are
ingested into ``~/.cache/tracekit`` (or ``$TRACEKIT_CACHE``) and reused while the inputs are unchanged.

The cache keeps at most ``$TRACEKIT_CACHE_MAX_MB`` (default 4096) megabytes: after each new entry the
least recently used runs are removed until it fits (the one just used always stays).
``tracekit cache list`` shows it, ``tracekit cache clear`` empties it.
"""

from __future__ import annotations

import hashlib
import os
import time

from . import settings
from .layout.manifest import read_manifest
from .layout.versions import in_use, lock_file, remove_run


def root() -> str:
    return settings.cache_dir()


def dir_for(paths: list[str]) -> str:
    key = hashlib.sha256("\0".join(sorted(os.path.abspath(p) for p in paths)).encode()).hexdigest()[:16]
    return os.path.join(root(), f"run-{key}")


def _size(d: str) -> int:
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs
               if not os.path.islink(os.path.join(r, f)))


def _last_used(d: str) -> float:
    """When the cached run ``d`` was last opened: the time of its writer's lock file (touched on every open:
    beside the run, so that opening never writes into it), else of the run itself."""
    try:
        return os.path.getmtime(lock_file(d))
    except OSError:
        return os.path.getmtime(d) if os.path.exists(d) else 0.0


def entries() -> list[dict]:
    """The cached runs, most recently used first: path, inputs, size, last use."""
    out = []
    base = root()
    if not os.path.isdir(base):
        return out
    for name in os.listdir(base):
        d = os.path.join(base, name)
        if not (name.startswith("run-") and os.path.isdir(d)):  # a run: tracekit's link to its version
            continue
        inputs = [i["path"] for i in (read_manifest(d) or {}).get("inputs", [])]
        out.append({"run": d, "inputs": len(inputs), "first_input": inputs[0] if inputs else None,
                    "mb": round(_size(d) / 1e6, 3),
                    "last_used": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(_last_used(d)))})
    return sorted(out, key=lambda e: e["last_used"], reverse=True)


def touch(run_dir: str) -> None:
    """Mark the cached run ``run_dir`` as used now, for the least-recently-used eviction: its lock file's
    time, never a file in the run (a run is not written by opening it)."""
    try:
        os.utime(lock_file(run_dir))
    except OSError:
        pass


FILL_WAIT_S = 1800  # how long a process opening traces waits for another process filling their cache run


def enforce_cap(keep: str) -> list[str]:
    """Remove least recently used runs until the cache fits its cap; never ``keep``. Returns the removed."""
    cap = settings.cache_max_bytes()
    base = root()
    runs = [os.path.join(base, n) for n in os.listdir(base) if n.startswith("run-")] if os.path.isdir(base) else []
    sizes = {d: _size(d) for d in runs}
    total = sum(sizes.values())
    removed = []
    for d in sorted(runs, key=_last_used):
        if total <= cap:
            break
        if os.path.abspath(d) == os.path.abspath(keep) or in_use(d):  # never a run being written or read
            continue
        remove_run(d)
        total -= sizes[d]
        removed.append(d)
    return removed


def clear() -> tuple[int, int]:
    """Remove every cached run that no process is writing or reading; returns (removed, left in use).
    The writers' lock files stay: one removed while a writer waits on it would let a third take another."""
    n = busy = 0
    base = root()
    if os.path.isdir(base):
        for name in os.listdir(base):
            if name.startswith("run-"):
                if in_use(os.path.join(base, name)):
                    busy += 1
                    continue
                remove_run(os.path.join(base, name))
                n += 1
    return n, busy
