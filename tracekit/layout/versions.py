"""What keeps concurrent and interrupted ingests from hurting a run, and readers from seeing half of one.

- A run is a plain directory (copy it, tar it, upload it): every complete build is a version inside it,
  ``RUN/versions/v-NS-PID/``, and ``RUN/CURRENT`` names the live one. An ingest builds the next version
  there and switches by replacing CURRENT in one rename (written to a temporary file and fsync'd first),
  as Delta Lake's log or Iceberg's metadata pointer names a table's snapshot: a reader sees the old run
  or the new one, never none and never a mix.
- A reader pins the version it opened (a shared flock on that version's directory) for as long as it
  holds it; a writer removes a version only under an exclusive flock of it, after renaming it away, so
  a reader either pinned it first or finds it gone and reads CURRENT again.
- One writer at a time: ``RUN/writer.lock``. Under it, the writer collects what earlier ones left (the
  versions that are neither current nor held, ``RUN/trash/``), and only in a directory that carries
  tracekit's marker (``RUN/tracekit-run.json``, written when tracekit makes the directory): tracekit
  deletes nothing it did not make. Runs of the earlier layouts are in legacy.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil

from ..errors import RunError, TracekitError
from . import legacy
from .paths import (
    CURRENT,
    MARKER,
    MARKER_FORMAT,
    PARTS_DIR,
    current_name,
    current_path,
    has_layout,
    has_marker,
    is_being_made,
    lock_path,
    marker_path,
    open_lock_file,
    trash_dir,
    version_path,
    versions_dir,
)


def version_dir(out: str) -> str:
    """A new, unused version directory of run ``out`` (not created; its parent ``versions/`` is)."""
    import time

    os.makedirs(versions_dir(out), exist_ok=True)
    return version_path(out, f"v-{time.time_ns()}-{os.getpid()}")


def run_of(version: str) -> str:
    """The run directory a version directory belongs to (RUN/versions/v-...)."""
    return os.path.dirname(os.path.dirname(version))


def current_version(run: str) -> str | None:
    """The directory of the live version of ``run`` (new layout), or None where CURRENT names none."""
    name = current_name(run)
    return version_path(run, name) if name else None


def is_current(run: str, version: str) -> bool:
    return current_name(run) == os.path.basename(version)


def _fsync_dir(d: str) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_small_atomic(path: str, text: str) -> None:
    """``text`` into ``path`` whole or not at all: a temporary file beside it, fsync'd, renamed, the
    directory fsync'd (the rename survives a power cut)."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        os.remove(tmp)  # (an earlier process's of this pid, or a link planted there: never written through)
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(os.path.dirname(path))


def make_marker(run: str) -> None:
    """Mark ``run`` as a directory tracekit made (its format tag and a random id): what it may delete."""
    import json
    import uuid

    write_small_atomic(marker_path(run), json.dumps({"format": MARKER_FORMAT, "id": uuid.uuid4().hex}) + "\n")


def switch(version: str, out: str) -> None:
    """Make the complete build in ``version`` the live version of run ``out``: CURRENT replaced in one
    rename. Collecting the versions this leaves behind is ``collect`` (a separate step: the switch is done
    whatever happens to it)."""
    write_small_atomic(current_path(out), os.path.basename(version) + "\n")


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


def lock_exclusive(directory: str) -> int | None:
    """A non-blocking exclusive flock on ``directory`` (a rank part's scratch while it is built): its
    descriptor, or None where it cannot be locked; BlockingIOError when another process holds it."""
    return _lock_dir(directory, shared=False)


def _held(version: str) -> bool:
    """A reader holds this version directory (pin)."""
    try:
        fd = _lock_dir(version, shared=False)
    except BlockingIOError:
        return True
    if fd is not None:
        os.close(fd)
    return False


def _remove_version(out: str, version: str) -> bool:
    """Remove one version of ``out`` unless a reader holds it: under an exclusive flock it is renamed into
    the run's trash (a reader that opens it after that finds it gone), then removed. True when removed."""
    try:
        fd = _lock_dir(version, shared=False)
    except BlockingIOError:
        return False
    try:
        trash = trash_dir(out)
        os.makedirs(trash, exist_ok=True)
        dest = os.path.join(trash, os.path.basename(version))
        shutil.rmtree(dest, ignore_errors=True)
        try:
            os.replace(version, dest)
        except OSError:
            dest = version
    finally:
        if fd is not None:
            os.close(fd)
    shutil.rmtree(dest, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.rmdir(trash_dir(out))  # (when empty)
    return True


def discard(version: str) -> None:
    """Remove an unfinished build of a run (never the live one). It is renamed first, into the run's trash:
    a task still writing for it elsewhere (a Dask worker whose scheduler died mid-task) then finds no
    directory under the old name and cannot put part of the build back."""
    out = run_of(version)
    if not is_current(out, version):
        _remove_version(out, version)


def collect(out: str) -> None:
    """What earlier writers left in run ``out``: every version but the current one that no reader holds,
    the trash, temporary files of an interrupted switch. A writer's step, under the writer lock; only in a
    directory that carries tracekit's marker."""
    if not has_marker(out):
        return
    live = current_name(out)
    for e in _listdir(versions_dir(out)):
        if e != live:
            _remove_version(out, os.path.join(versions_dir(out), e))
    shutil.rmtree(trash_dir(out), ignore_errors=True)
    for e in _listdir(out):
        if e.startswith((CURRENT + ".tmp-", MARKER + ".tmp-")):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(out, e))
    legacy.remove_old_files(out)  # (a migrated plain run's, once no reader of the plain layout holds it)


recover = collect  # (the name the writers used)


def resolve_output(out: str) -> str:
    """The run to write for -o ``out``: a user's link to a run is followed to that run (and stays a
    link); tracekit's own link (the earlier layout) is the run."""
    seen = 0
    while os.path.islink(out) and not legacy.is_link_run(out) and seen < 40:
        out = os.path.abspath(os.path.join(os.path.dirname(out), os.readlink(out)))
        seen += 1
    return out


def pin(run: str) -> tuple[str, int | None]:
    """The version of ``run`` to read, pinned: (its directory, the descriptor of the shared flock that
    holds it; close it when done, or None where it cannot be locked). Runs of the earlier layouts: their
    version, as legacy.py finds it."""
    import time

    for _ in range(200):
        name = current_name(run)
        if name is None:
            if os.path.isdir(os.path.join(run, PARTS_DIR)) and not os.path.exists(current_path(run)):
                raise RunError(f"{run}: holds ranks' parts (trace_handler(DIR, run=RUN)) but no run built from them "
                               f"yet; build it with `tracekit ingest --reduce {run}`")
            if has_layout(run) or os.path.exists(current_path(run)):
                raise RunError(f"{run}: a tracekit run without a complete version (an ingest into it failed or is "
                               "still running, or the run is damaged); ingest the traces again, into it with "
                               "--force or into a new directory")
            version = legacy.version_of(run)
            try:
                return version, _lock_dir(version, shared=True)
            except BlockingIOError:
                return version, None
        version = version_path(run, name)
        try:
            fd = _lock_dir(version, shared=True)
        except BlockingIOError:  # a writer is removing it: CURRENT has moved on
            time.sleep(0.01)
            continue
        try:
            same = fd is not None and os.fstat(fd).st_ino == os.stat(version).st_ino
        except OSError:
            same = False
        if same or (fd is None and os.path.isdir(version)):
            return version, fd
        if fd is not None:
            os.close(fd)
        if current_name(run) == name and not os.path.isdir(version):
            raise RunError(f"{run}: its {CURRENT} names versions/{name}, which is missing; ingest the traces "
                           "into it again with --force")
    raise RunError(f"{run}: its live version kept changing while it was opened; try again")


def hold_for_reading(version: str) -> int | None:
    """A reader's shared lock on a version directory (flock: nothing is written into the run): its
    descriptor, to close when done, or None where it cannot be locked."""
    try:
        return _lock_dir(version, shared=True)
    except BlockingIOError:
        return None


def in_use(out: str) -> bool:
    """Run ``out`` is being written (its writer lock is held) or read (a version of it is held by a
    reader): not to be removed."""
    import fcntl

    if legacy.is_link_run(out):
        return legacy.in_use(out)
    paths = [(lock_path(out), os.O_RDONLY)] + [(os.path.join(versions_dir(out), v), os.O_RDONLY | os.O_DIRECTORY)
                                               for v in _listdir(versions_dir(out))]
    for path, flags in paths:
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


def foreign_link(out: str) -> bool:
    """``out`` is a symbolic link tracekit did not make (not the link layout's own link to its sibling
    version): whatever it points to is someone else's, never to be removed or written through as a run."""
    return os.path.islink(out) and not legacy.is_link_run(out)


def owned(out: str) -> bool:
    """``out`` is a run tracekit made: its marker, or a run of the earlier layouts (tracekit's link to a
    version whose manifest tracekit wrote, or such a manifest at the top); never through a link tracekit did
    not make (the marker it finds is the target's: a user's run, not this one)."""
    if foreign_link(out):
        return False
    return has_marker(out) or legacy.is_link_run(out) or legacy.is_plain_run(out)


def remove_run(out: str) -> bool:
    """Remove run ``out`` whole, if tracekit made it and nothing reads or writes it; True when removed. A
    directory without tracekit's marker, and a link tracekit did not make, are never touched."""
    import fcntl

    if foreign_link(out):
        return False
    if legacy.is_link_run(out) or (legacy.is_plain_run(out) and not has_marker(out)):
        return legacy.remove_run(out)
    if not has_marker(out):
        return False
    try:
        f = open_lock_file(lock_path(out))
    except (OSError, TracekitError):
        return False
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        for v in _listdir(versions_dir(out)):
            if not _remove_version(out, os.path.join(versions_dir(out), v)):
                return False  # a reader holds it: the run stays (the versions removed were not current)
        os.remove(marker_path(out))  # first: a run half removed is no longer one tracekit may open
        shutil.rmtree(out, ignore_errors=True)
    return True


def last_used(out: str) -> float:
    """When run ``out`` was last opened through the cache (touch), else written."""
    for p in (lock_path(out), legacy.lock_file(out), out):
        with contextlib.suppress(OSError):
            return os.path.getmtime(p)
    return 0.0


def touch(out: str) -> None:
    """Mark run ``out`` used now: its writer lock's time (no data of the run is written)."""
    for p in (lock_path(out), legacy.lock_file(out)):
        with contextlib.suppress(OSError):
            os.utime(p, follow_symlinks=False)  # (a link planted there: its own time, never its target's)
            return


def _listdir(d: str) -> list[str]:
    try:
        return sorted(os.listdir(d))
    except OSError:
        return []


def _cannot_write(out: str, exc: OSError) -> TracekitError:
    return TracekitError(f"cannot write the run {out}: {exc.strerror} ({exc.filename or out}); nothing was "
                         "written. Choose an -o on a writable file system")


def _open_lock(out: str) -> tuple[object, bool]:
    """Open ``out/writer.lock``, making ``out`` if it does not exist: (the file, whether this made ``out``)."""
    created = False
    try:
        os.makedirs(os.path.dirname(out), exist_ok=True)
        try:
            os.mkdir(out)
            created = True
        except FileExistsError:
            pass
        return open_lock_file(lock_path(out)), created
    except OSError as exc:  # a read-only file system, a directory not ours: say so, in one line
        raise _cannot_write(out, exc) from None


def _same_file(f, path: str) -> bool:
    try:
        return os.fstat(f.fileno()).st_ino == os.stat(path).st_ino
    except OSError:
        return False


def _take(f, out: str, wait_s: float, instead: str) -> None:
    import fcntl
    import sys
    import time

    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    f.seek(0)
    holder = f.read().strip() or "another process"
    if not wait_s:
        raise TracekitError(f"{out}: another tracekit ingest is writing this run ({holder}); wait for it "
                            f"to finish, {instead}") from None
    print(f"tracekit: another tracekit process ({holder}) is ingesting these traces; waiting for it "
          f"(at most {wait_s:g} s)", file=sys.stderr)
    deadline = time.monotonic() + wait_s
    while True:
        time.sleep(0.2)
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise TracekitError(f"{out}: another tracekit process ({holder}) has been ingesting these "
                                    f"traces for over {wait_s:g} s; try again when it has finished") from None


@contextlib.contextmanager
def writer_lock(out: str, wait_s: float = 0, instead: str = "or write elsewhere with another -o"):
    """Hold ``RUN/writer.lock`` for the whole ingest; a run of an earlier layout is migrated first
    (legacy.migrate). A directory that does not exist is made, with tracekit's marker; one that exists
    without the marker is adopted only when empty. A second ingest into the same run fails at once with a
    message naming the first one; with ``wait_s`` (a cache fill: the same traces opened twice) it says that
    it waits, and waits for it up to ``wait_s`` seconds (``instead``: what else the user can do, said
    after 'wait for it to finish'). If no version was ever switched in when it ends, the run this made is
    removed again: a failed first ingest leaves nothing."""
    legacy.migrate(out, make_marker, switch)
    while True:
        f, created = _open_lock(out)
        try:
            _take(f, out, wait_s, instead)
        except BaseException:
            f.close()
            raise
        if _same_file(f, lock_path(out)):  # (not a lock file of a run removed while this one waited)
            break
        f.close()
    try:
        if not has_marker(out):
            # (rank parts alone: a run to be reduced; a lock and a marker's temporary file: one being made)
            if not is_being_made(set(os.listdir(out)) - {PARTS_DIR}):
                with contextlib.suppress(OSError):
                    os.remove(lock_path(out))  # (a refusal leaves nothing behind)
                raise TracekitError(f"{out}: exists, is not empty and is not a tracekit run (no {MARKER}); "
                                    "choose another -o (or remove that directory yourself)")
            try:
                make_marker(out)
            except OSError as exc:
                raise _cannot_write(out, exc) from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}")
        f.flush()
        yield
    finally:
        try:
            if current_name(out) is None and has_marker(out) and not _listdir(versions_dir(out)):
                _unmake(out, created)  # made for an ingest that switched nothing in: gone again
        finally:
            f.close()


def _unmake(out: str, created: bool) -> None:
    """Remove what tracekit made in ``out`` for an ingest that switched no version in: the directory if it
    made it, else (an empty directory the user gave) only its own files."""
    with contextlib.suppress(OSError):
        os.remove(marker_path(out))
        if created:
            shutil.rmtree(out, ignore_errors=True)
            return
        for p in (versions_dir(out), trash_dir(out)):
            shutil.rmtree(p, ignore_errors=True)
        os.remove(lock_path(out))


def left_aside(out: str) -> str | None:
    """Where run ``out`` is while ``out`` is missing because a migration from the earlier layout died
    between removing tracekit's old link and moving the new directory in (legacy.py): for a reader to
    read it there (the next writer puts it in place). None otherwise."""
    return legacy.left_aside(out)
