"""What keeps concurrent and interrupted ingests from hurting a run: one writer at a time (a lock file
beside the run), the leftovers of a dead ingest cleaned up (or, if it died between the two renames of
its swap, the previous run put back), and pool workers that die with their parent."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import sys

from ..errors import TracekitError

_LEFTOVER = re.compile(r"^(?:\.(?P<tmp>.+)\.tmp-(?P<p1>\d+)|(?P<old>.+)\.old-(?P<p2>\d+))$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover(out: str) -> None:
    """Clean what dead ingests left beside ``out``: their half-built ``.NAME.tmp-PID`` directories, and
    ``NAME.old-PID`` runs moved aside; if ``out`` itself is missing because an ingest died between
    moving the old run aside and moving the new one in, the old run goes back in place."""
    parent, name = os.path.split(out)
    try:
        entries = os.listdir(parent)
    except OSError:
        return
    for e in entries:
        m = _LEFTOVER.match(e)
        if not m or (m.group("tmp") or m.group("old")) != name:
            continue
        pid = int(m.group("p1") or m.group("p2"))
        if pid == os.getpid() or _alive(pid):
            continue
        path = os.path.join(parent, e)
        if m.group("old") and not os.path.exists(out):
            os.replace(path, out)  # the interrupted swap's previous run: back in place
        else:
            shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def writer_lock(out: str):
    """Hold ``.NAME.lock`` beside the run for the whole ingest; a second ingest into the same run fails
    at once with a message naming the first one."""
    import fcntl

    parent, name = os.path.split(out)
    os.makedirs(parent, exist_ok=True)
    path = os.path.join(parent, f".{name}.lock")
    f = open(path, "a+")
    try:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            raise TracekitError(f"{out}: another tracekit ingest is writing this run ({holder}); wait for it to "
                                "finish, or write elsewhere with another -o") from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}")
        f.flush()
        yield
    finally:
        f.close()


def die_with_parent() -> None:
    """In a pool worker: the kernel kills it when the process that started it dies (kill -9 included),
    instead of leaving it parsing for minutes. Linux only; elsewhere a no-op."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent died before prctl took effect
            os._exit(1)
    except OSError:
        pass
