"""What keeps concurrent and interrupted ingests from hurting a run, and readers from seeing half of one.

- Versions: a run ``NAME`` is a symbolic link to a sibling directory ``.NAME.v-PID-NS`` that holds one
  complete build. An ingest builds a new version beside it and switches the link with one rename
  (atomic on POSIX): a reader sees the old run or the new one, never none and never a mix, and keeps the
  directory it opened (``Run`` resolves the link once, and holds a shared lock on that version while it
  is open). An ingest removes every other finished version that no reader holds.
- One writer at a time: a lock file ``.NAME.lock`` beside the run.
- Leftovers of a dead ingest (an unfinished version, a link it had not switched yet, a run of the old
  layout it had moved aside) are cleaned up, or put back, by the next ingest (under the writer lock). A
  reader never writes: it reads a run moved aside where it lies (``left_aside``) and leaves the rest.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil

from ..errors import TracekitError
from .paths import MANIFEST, is_run

_LEFTOVER = re.compile(r"^(?:\.(?P<tmp>.+)\.(?:tmp|link)-(?P<p1>\d+)|(?P<old>.+)\.old-(?P<p2>\d+)"
                       r"|\.(?P<ver>.+)\.v-(?P<p3>\d+)-\d+)$")


def version_dir(out: str) -> str:
    """A new, unused version directory for run ``out`` (not created)."""
    import time

    parent, name = os.path.split(out)
    return os.path.join(parent, f".{name}.v-{os.getpid()}-{time.time_ns()}")


def discard(version: str) -> None:
    """Remove an unfinished build of a run. It is renamed first (``.NAME.tmp-PID``, which recovery
    removes if this process dies before it does): a task still writing for it elsewhere (a Dask worker
    whose scheduler died mid-task) then finds no directory under the old name and cannot put part of
    the build back; what it has open goes with the rest."""
    parent, base = os.path.split(version)
    m = _LEFTOVER.match(base)
    name = m.group("ver") if m and m.group("ver") else base.lstrip(".")
    trash = os.path.join(parent, f".{name}.tmp-{os.getpid()}")
    shutil.rmtree(trash, ignore_errors=True)
    try:
        os.replace(version, trash)
    except OSError:
        trash = version  # (already gone, or cannot be renamed: removed where it is)
    shutil.rmtree(trash, ignore_errors=True)


def is_ours(out: str) -> bool:
    """``out`` is a run link that tracekit made (it points at a sibling .NAME.v-* directory)."""
    if not os.path.islink(out):
        return False
    target = os.readlink(out)
    return os.sep not in target and target.startswith(f".{os.path.basename(out)}.v-")


def resolve_output(out: str) -> str:
    """The run to write for -o ``out``: a user's link to a run is followed to that run (and stays a
    link); tracekit's own run link is the run."""
    seen = 0
    while os.path.islink(out) and not is_ours(out) and seen < 40:
        out = os.path.abspath(os.path.join(os.path.dirname(out), os.readlink(out)))
        seen += 1
    return out


def switch(version: str, out: str) -> None:
    """Make run ``out`` the complete build in ``version``: one atomic rename of a new link over the old
    one. A run of the old layout (a real directory) is moved aside first, once."""
    parent, name = os.path.split(out)
    link = os.path.join(parent, f".{name}.link-{os.getpid()}")
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(os.path.basename(version), link)
    if os.path.isdir(out) and not os.path.islink(out):  # the old layout, or an empty directory
        aside = f"{out}.old-{os.getpid()}"
        os.replace(out, aside)
        os.replace(link, out)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.replace(link, out)
    _prune(out, keep={os.path.realpath(version)})  # (the previous one too, unless a reader holds it)


def _prune(out: str, keep: set) -> None:
    """Remove finished versions of ``out`` other than ``keep`` (the current one) that no reader holds (a
    Run holds a shared lock on the version it reads, for as long as it is open)."""
    parent, name = os.path.split(out)
    for e in os.listdir(parent):
        m = _LEFTOVER.match(e)
        path = os.path.join(parent, e)
        if m and m.group("ver") == name and os.path.realpath(path) not in keep and is_run(path) \
                and not _held(path):
            shutil.rmtree(path, ignore_errors=True)


def _lock_dir(version: str, shared: bool) -> int | None:
    """A non-blocking flock on the version directory itself: its descriptor, or None where the directory
    cannot be opened or locked. Raises BlockingIOError when another process holds a conflicting lock."""
    import fcntl

    try:
        fd = os.open(version, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise
    except OSError:
        os.close(fd)
        return None
    return fd


def _held(version: str) -> bool:
    """A reader holds this version directory (hold_for_reading)."""
    try:
        fd = _lock_dir(version, shared=False)
    except BlockingIOError:
        return True
    if fd is not None:
        os.close(fd)
    return False


def remove_run(out: str) -> None:
    """Remove run ``out`` whole: its link and every version of it."""
    parent, name = os.path.split(out)
    if os.path.islink(out):
        os.unlink(out)
    else:
        shutil.rmtree(out, ignore_errors=True)
    for e in os.listdir(parent):
        m = _LEFTOVER.match(e)
        if m and name in (m.group("ver"), m.group("tmp"), m.group("old")):
            p = os.path.join(parent, e)
            os.unlink(p) if os.path.islink(p) else shutil.rmtree(p, ignore_errors=True)


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
    moving the old run aside and moving the new one in, the old run goes back in place. A writer's step,
    under the run's writer lock (ingest, rederive): opening a run never calls it."""
    parent, name = os.path.split(out)
    try:
        entries = os.listdir(parent)
    except OSError:
        return
    for e in entries:
        m = _LEFTOVER.match(e)
        if not m or (m.group("tmp") or m.group("old") or m.group("ver")) != name:
            continue
        pid = int(m.group("p1") or m.group("p2") or m.group("p3"))
        if pid == os.getpid() or _alive(pid):
            continue
        path = os.path.join(parent, e)
        if m.group("ver"):
            if not os.path.isfile(os.path.join(path, MANIFEST)):  # a build that never finished
                shutil.rmtree(path, ignore_errors=True)
            elif os.path.realpath(out) != os.path.realpath(path) and not _held(path):
                shutil.rmtree(path, ignore_errors=True)  # complete, but its swap was killed: nobody's run
        elif m.group("old") and not os.path.lexists(out):
            os.replace(path, out)  # the old layout's interrupted swap: the previous run back in place
        elif os.path.islink(path):
            os.unlink(path)
        else:
            shutil.rmtree(path, ignore_errors=True)


def left_aside(out: str) -> str | None:
    """Where the run ``out`` is when ``out`` is missing because an ingest died between moving the run (of the
    old layout: a real directory) aside and moving the new one in: its ``NAME.old-PID``, for a reader to read
    in place (the next ingest puts it back). None where ``out`` exists or no dead ingest left one."""
    if os.path.lexists(out):
        return None
    parent, name = os.path.split(out)
    for e in sorted(_listdir(parent)):
        m = _LEFTOVER.match(e)
        if m and m.group("old") == name and not _alive(int(m.group("p2"))) and is_run(os.path.join(parent, e)):
            return os.path.join(parent, e)
    return None


def hold_for_reading(version: str) -> int | None:
    """A reader's shared lock on the version directory it reads (flock on the directory: no file is
    written into the run): eviction and ``cache clear`` leave a version so held alone. Returns the
    descriptor to close when done, or None where the directory cannot be locked."""
    try:
        return _lock_dir(version, shared=True)
    except BlockingIOError:  # (a writer's exclusive lock is never taken on a version: not expected)
        return None


def lock_file(out: str) -> str:
    """The writer's lock file of run ``out``: ``.NAME.lock`` beside it (outside the run)."""
    parent, name = os.path.split(out)
    return os.path.join(parent, f".{name}.lock")


def in_use(out: str) -> bool:
    """Run ``out`` is being written (its writer lock is held) or read (a version of it is held by a
    reader): not to be removed."""
    import fcntl

    parent, name = os.path.split(out)
    lock = lock_file(out)
    versions = [os.path.join(parent, e) for e in _listdir(parent)
                if (m := _LEFTOVER.match(e)) and m.group("ver") == name]
    for path, flags in [(lock, os.O_RDONLY)] + [(v, os.O_RDONLY | os.O_DIRECTORY) for v in versions]:
        try:
            fd = os.open(path, flags)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            continue
        finally:
            os.close(fd)
    return False


def _listdir(d: str) -> list[str]:
    try:
        return os.listdir(d)
    except OSError:
        return []


@contextlib.contextmanager
def writer_lock(out: str, wait_s: float = 0):
    """Hold ``.NAME.lock`` beside the run for the whole ingest. A second ingest into the same run fails at
    once with a message naming the first one; with ``wait_s`` (a cache fill: the same traces opened twice)
    it says that it waits, and waits for it up to ``wait_s`` seconds."""
    import fcntl
    import sys
    import time

    parent = os.path.dirname(out)
    path = lock_file(out)
    try:
        os.makedirs(parent, exist_ok=True)
        f = open(path, "a+")
    except OSError as exc:  # a read-only file system, a directory not ours: say so, in one line
        raise TracekitError(f"cannot write the run {out}: {exc.strerror} ({exc.filename or parent}); nothing was "
                            "written. Choose an -o on a writable file system") from None
    try:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            if not wait_s:
                raise TracekitError(f"{out}: another tracekit ingest is writing this run ({holder}); wait for it "
                                    "to finish, or write elsewhere with another -o") from None
            print(f"tracekit: another tracekit process ({holder}) is ingesting these traces; waiting for it "
                  f"(at most {wait_s:g} s)", file=sys.stderr)
            deadline = time.monotonic() + wait_s
            while True:
                time.sleep(0.2)
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise TracekitError(f"{out}: another tracekit process ({holder}) has been ingesting these "
                                            f"traces for over {wait_s:g} s; try again when it has finished") from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}")
        f.flush()
        yield
    finally:
        f.close()

