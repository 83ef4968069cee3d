"""Private spill directories for DuckDB's ``temp_directory``, and the sweep of those a killed process left.

A query past its memory limit spills to a directory of this process (never ``./.tmp``, which is inside the
run when a user stands in it). A process removes its own on close; one killed (the kernel's out-of-memory
killer, ``kill -9``) cannot, and a spilling query leaves gigabytes behind (15 GB seen from one killed
cross join). So each name carries its process id, and making one removes the directories of the same kind
whose process is gone and which nothing has written for ``STALE_S``: a directory of a live process, of
another user, or written to recently is never touched (a process id seen from another PID namespace may
look dead; the quiet time keeps a live query's spill safe there too).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid

STALE_S = 600  # seconds without a write before a dead process's spill directory is removed


def spill_dir(prefix: str, near: str | None = None, make: bool = False) -> str:
    """A new spill directory's path, ``{near or the temp dir}/{prefix}{pid}-{random}`` (made when ``make``;
    DuckDB makes it when it first spills), after sweeping what dead processes left there."""
    base = near or tempfile.gettempdir()
    sweep(base, prefix)
    path = os.path.join(base, f"{prefix}{os.getpid()}-{uuid.uuid4().hex[:12]}")
    if make:
        os.mkdir(path, 0o700)
    return path


def sweep(base: str, prefix: str) -> list[str]:
    """Remove ``base``'s ``{prefix}{pid}-...`` directories of this user whose process is gone and which
    nothing has written for STALE_S; returns those removed. Never raises."""
    removed = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    now = time.time()
    for e in entries:
        if not e.name.startswith(prefix):
            continue
        pid = e.name[len(prefix):].split("-", 1)[0]
        try:
            if not pid.isdigit() or _alive(int(pid)) or not e.is_dir(follow_symlinks=False):
                continue
            if e.stat(follow_symlinks=False).st_uid != os.getuid() or _last_write(e.path) > now - STALE_S:
                continue
            shutil.rmtree(e.path, ignore_errors=True)
            removed.append(e.path)
        except OSError:
            continue
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # (another user's process: alive)
        return True
    return True


def _last_write(path: str) -> float:
    newest = os.stat(path, follow_symlinks=False).st_mtime
    with os.scandir(path) as it:
        for f in it:
            newest = max(newest, f.stat(follow_symlinks=False).st_mtime)
    return newest
