"""Runs written by the earlier layouts, read where they are and migrated by the next writer.

- The link layout: ``RUN`` is a symbolic link to a sibling ``.RUN.v-PID-NS`` (one complete version,
  manifest.json at its top), with a lock file ``.RUN.lock`` beside it.
- The plain layout: ``RUN`` is itself the version (manifest.json at its top).

A reader reads either in place. The next ingest or ``--rederive`` migrates the run to a plain directory
(versions.py) before it writes, under the old lock: the version's files are hard-linked (copied where
links cannot be made) into ``RUN/versions/v-…`` and CURRENT names it; the link layout's run is built at
``.RUN.tracekit-migrate`` and renamed into place, then its old version (unless a reader holds it), its
unswitched links and its lock file go. Only what the old layout's own names and tracekit's manifest prove
tracekit's is removed: a half-built ``.RUN.v-…`` without a manifest, or any other sibling, stays.
"""

from __future__ import annotations

import contextlib
import os
import shutil

from ..errors import TracekitError
from .paths import (
    EVENTS_DIR,
    FACTS_DIR,
    MANIFEST,
    TABLE_FILES,
    current_name,
    has_marker,
    is_version,
    version_path,
    versions_dir,
)

OLD_FILES = (MANIFEST, EVENTS_DIR, FACTS_DIR, *TABLE_FILES.values())  # a plain run's top level


def _old_version_prefix(out: str) -> str:
    return f".{os.path.basename(out)}.v-"


def is_link_run(out: str) -> bool:
    """``out`` is a run of the link layout: tracekit's link to a sibling ``.NAME.v-*`` directory."""
    if not os.path.islink(out):
        return False
    target = os.readlink(out)
    return os.sep not in target and target.startswith(_old_version_prefix(out))


def is_plain_run(out: str) -> bool:
    """``out`` is a run of the plain layout: a directory (not a link) that is itself a version."""
    return os.path.isdir(out) and not os.path.islink(out) and not has_marker(out) and is_version(out)


def lock_file(out: str) -> str:
    """The earlier layouts' writer lock, beside the run."""
    parent, name = os.path.split(out)
    return os.path.join(parent, f".{name}.lock")


def staging(out: str) -> str:
    """Where a migration of the link layout builds the new run directory, beside the old link."""
    parent, name = os.path.split(out)
    return os.path.join(parent, f".{name}.tracekit-migrate")


def _complete(run: str) -> bool:
    name = current_name(run)
    return has_marker(run) and name is not None and is_version(version_path(run, name))


def left_aside(out: str) -> str | None:
    """The new run directory a migration left at ``.NAME.tracekit-migrate`` when it died between removing
    the old link and moving the new directory in; None where ``out`` exists or there is none."""
    if os.path.lexists(out):
        return None
    st = staging(out)
    return st if _complete(st) else None


def version_of(run: str) -> str:
    """The version directory a reader reads for a run of an earlier layout (or one left aside)."""
    aside = left_aside(run)
    if aside:
        return version_path(aside, current_name(aside))
    return os.path.realpath(run)


def _held(path: str) -> bool:
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


def _old_versions(out: str) -> list[str]:
    parent = os.path.dirname(out)
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    return [os.path.join(parent, e) for e in sorted(names) if e.startswith(_old_version_prefix(out))]


def in_use(out: str) -> bool:
    """A run of the link layout is being written (its old lock held) or read (a version held)."""
    import fcntl

    with contextlib.suppress(OSError):
        with open(lock_file(out)) as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
    return any(_held(v) for v in _old_versions(out) if os.path.isdir(v) and not os.path.islink(v))


def remove_run(out: str) -> bool:
    """Remove a run of an earlier layout that nothing reads or writes: its link, the versions tracekit
    wrote, its lock file (the plain layout: the directory). True when removed."""
    if is_plain_run(out):
        if _held(out):
            return False
        shutil.rmtree(out, ignore_errors=True)
        return True
    if not is_link_run(out) or in_use(out):
        return False
    os.unlink(out)
    _remove_old_siblings(out)
    return True


def _remove_old_siblings(out: str) -> None:
    """The link layout's versions (complete ones: tracekit's manifest) that no reader holds, its links that
    were never switched, its lock file."""
    parent, name = os.path.split(out)
    for v in _old_versions(out):
        if not os.path.islink(v) and is_version(v) and not _held(v):
            shutil.rmtree(v, ignore_errors=True)
    for e in os.listdir(parent):
        p = os.path.join(parent, e)
        if e.startswith(f".{name}.link-") and os.path.islink(p) and \
                os.readlink(p).startswith(_old_version_prefix(out)):
            os.unlink(p)
    with contextlib.suppress(OSError):
        os.remove(lock_file(out))


def link_tree(src: str, dst: str, names=None) -> None:
    """The files of ``src`` (those of ``names`` at its top, or all) into ``dst``: hard links where the file
    system allows, else copies."""
    for top in (names if names is not None else os.listdir(src)):
        s = os.path.join(src, top)
        if not os.path.lexists(s) or os.path.islink(s):
            continue
        if not os.path.isdir(s):
            _link_or_copy(s, os.path.join(dst, top))
            continue
        for root, _dirs, files in os.walk(s):
            rel = os.path.relpath(root, src)
            os.makedirs(os.path.join(dst, rel), exist_ok=True)
            for f in files:
                _link_or_copy(os.path.join(root, f), os.path.join(dst, rel, f))


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


@contextlib.contextmanager
def _old_lock(out: str):
    import fcntl

    from .paths import open_lock_file

    path = lock_file(out)
    try:
        f = open_lock_file(path)
    except OSError as exc:
        raise TracekitError(f"cannot write the run {out}: {exc.strerror} ({path}); nothing was written. "
                            "Choose an -o on a writable file system") from None
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise TracekitError(f"{out}: another tracekit ingest is writing this run; wait for it to finish, "
                                "or write elsewhere with another -o") from None
        yield
        with contextlib.suppress(OSError):
            os.remove(path)  # (the new layout's lock is inside the run)


def migrate(out: str, make_marker, switch) -> None:
    """Turn a run of an earlier layout into a plain directory with versions inside (see the module's
    docstring); nothing to do for any other ``out``. ``make_marker`` and ``switch`` are versions.py's."""
    if not (is_link_run(out) or is_plain_run(out) or left_aside(out)):
        return
    import time

    with _old_lock(out):
        if left_aside(out):  # died between unlinking the old link and the rename: finish it
            os.replace(staging(out), out)
        elif is_link_run(out):
            st = staging(out)
            if os.path.lexists(st):
                if not has_marker(st):
                    raise TracekitError(f"{st}: in the way of migrating run {out} to the plain layout, and not "
                                        "made by tracekit; move it away and ingest again")
                shutil.rmtree(st)
            os.mkdir(st)
            make_marker(st)
            v = version_path(st, f"v-{time.time_ns()}-{os.getpid()}")
            os.makedirs(v)
            link_tree(os.path.realpath(out), v)
            switch(v, st)
            os.unlink(out)
            os.replace(st, out)
        elif is_plain_run(out):  # (or one whose migration was cut short before its marker)
            shutil.rmtree(versions_dir(out), ignore_errors=True)  # (an earlier migration's, cut short)
            v = version_path(out, f"v-{time.time_ns()}-{os.getpid()}")
            os.makedirs(v)
            link_tree(out, v, OLD_FILES)
            switch(v, out)
            make_marker(out)  # last: until here the run is still the plain one
        _remove_old_siblings(out)
        remove_old_files(out)


def remove_old_files(out: str) -> None:
    """A migrated plain run's files at its top (now in its first version), unless a reader of the plain
    layout still holds the directory (then the next writer removes them)."""
    if not has_marker(out) or not os.path.isfile(os.path.join(out, MANIFEST)) or _held(out):
        return
    with contextlib.suppress(OSError):
        os.remove(os.path.join(out, MANIFEST))  # first: it is what made the top a version
    for name in OLD_FILES:
        p = os.path.join(out, name)
        if os.path.isdir(p):
            shutil.rmtree(p, ignore_errors=True)
        elif os.path.isfile(p):
            os.remove(p)
