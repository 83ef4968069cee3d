"""The reduce's compaction, done by the ranks' own part writers a group at a time: the writer that
completes a group of ranks (the ranks LO to HI of one partition of the compaction, compact.RANKS_PER_FILE
of them, as the reduce would cut a job with every rank present) joins the group's tables into one file
each, beside the parts, in ``RUN/parts/iteration_S/group-LO-HI/``. The reduce then links those files into
the run instead of reading 256 parts' tables and writing them again (at 4,096 ranks, 4.6 s of its wall
time and 8 s of its CPU, on 2 cores); the writing is spread over the hosts that made the parts, as a tree
reduce spreads it.

A group's files are used only where they are exactly what the reduce would write: group.json names each
part it joined by its part.json's identity (inode, modification time and size: a part made again is a new
file), the rules' key and the tables it holds; a group whose parts changed since, a missing rank, a
partition cut elsewhere (ranks missing at its start) or another tracekit's group is left alone and the
reduce compacts those parts itself. The group is built in a locked scratch directory and renamed into
place whole (as a part is), under a lock of its own, so that two writers completing it at once make it
once; a writer that cannot make it (its disk, a part removed meanwhile) leaves the reduce to do it: the
part it made stays.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
import uuid

import msgspec
import pyarrow as pa

from ..compact import RANKS_PER_FILE
from ..errors import TracekitError
from ..layout.paths import PART_FACTS, PART_FILE, PART_FINISH
from .part_doc import link_or_copy, locked_scratch, put_in_place, read_part


class _Part(msgspec.Struct):
    """What group.json keeps of a part's part.json (PART_KEYS)."""
    rank: int
    events: list[str]
    trace: dict
    events_bytes: list[int] | None = None  # each events file's size as written (a part of an earlier tracekit: none)
    iteration: int | None = None
    finish: list[str] | None = None
    stat: dict | None = None


class _Group(msgspec.Struct):
    """group.json, typed: a file that is not this is no group (the reduce reads the parts)."""
    format: str
    facts_key: str  # the key of what its parts derived (rules.part_key), as in their part.json
    facts: list[str]
    finish: list[str]
    ranks: dict[str, list[int]]
    files: dict[str, int]  # each table file of the group (relative path) and its size, bytes
    parts: dict[str, _Part]


GROUP_FILE = "group.json"
LOCK_WAIT_S = 30.0  # a writer waits this long for another that joins the same group, then leaves it to the reduce
GROUP_FORMAT = "tracekit rank group"
TRACES_FILE = "traces.parquet"  # the group's rows of the run's traces table, as the parts wrote them
GROUPS_FILE = "process_groups.parquet"  # the group's rows of the run's process_groups table
# what group.json keeps of each part.json
PART_KEYS = ("rank", "iteration", "events", "events_bytes", "finish", "stat", "trace")


def group_span(rank: int, world: int | None) -> tuple[int, int] | None:
    """(LO, HI): the ranks of the compaction's partition that holds ``rank`` when every rank of a job of
    ``world`` ranks is present (compact.partition cuts them from rank 0, RANKS_PER_FILE at a time); None
    where the world size is not known."""
    if not world or world <= 0 or rank < 0 or rank >= world:
        return None
    lo = rank // RANKS_PER_FILE * RANKS_PER_FILE
    return lo, min(lo + RANKS_PER_FILE, world) - 1


def group_dir(cycle_dir: str, lo: int, hi: int) -> str:
    return os.path.join(cycle_dir, f"group-{lo:07d}-{hi:07d}")


def identity(part: str) -> list[int]:
    """A part's identity: its part.json's inode, modification time (ns) and size (a part made again,
    or replaced, is another file)."""
    st = os.stat(os.path.join(part, PART_FILE))
    return [st.st_ino, st.st_mtime_ns, st.st_size]


def make_group(run: str, part: str, rank: int, world: int | None, key: str) -> str | None:
    """After ``part`` (rank ``rank``'s, just published) is in place: where its group's parts are all there
    and no group of exactly these parts exists, join their tables into the group's directory. Returns that
    directory, or None (the group is not complete, or already made)."""
    span = group_span(rank, world)
    if span is None:
        return None
    lo, hi = span
    cycle_dir = os.path.dirname(part)
    present = {r: os.path.join(cycle_dir, f"rank-{r}") for r in range(lo, hi + 1)}
    # first without the lock (a job's writers finish together: only those that find their group complete
    # take it); each writer looks after its own part is in place, so of the last two, one finds the other's
    if not all(os.path.isfile(os.path.join(d, PART_FILE)) for d in present.values()):
        return None
    with _group_lock(cycle_dir, lo, hi):
        chunk = sorted(present)
        try:
            ids = {str(r): identity(present[r]) for r in chunk}  # (before the docs: a part replaced between
        except FileNotFoundError:  # is then named by its old file, and the group never used)
            return None  # (a part removed meanwhile)
        dest = group_dir(cycle_dir, lo, hi)
        try:
            return _join(run, present, chunk, ids, key, dest)
        except (TracekitError, OSError, pa.ArrowException):
            if _ids_now(present, chunk) != ids:
                return None  # a part made again meanwhile: its writer joins the group again, after it
            raise


def _join(run: str, present: dict[int, str], chunk: list[int], ids: dict, key: str, dest: str) -> str | None:
    """make_group's work under the group's lock: the parts ``present`` (their identities ``ids``) joined into
    ``dest``, unless a group of exactly them is there, intact."""
    from ..derive import RANK_FINISH
    from ..rules import FACTS
    from ..run_tables import TRACES_SCHEMA, rows_table, write_run_table
    from .part_tables import compact_chunk, groups_table  # (at the call: a test makes the compaction fail)

    docs = {r: read_part(present[r], key) for r in chunk}
    have = [n for n in RANK_FINISH if all(n in (docs[r].get("finish") or ()) for r in chunk)]
    old = _doc(dest)
    if old and _matches(old, key, FACTS, ids, dest) and old.finish == have and set(old.parts) == set(ids):
        return None
    tag = f"group-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    with locked_scratch(run, tag) as scratch:
        os.mkdir(os.path.join(scratch, PART_FACTS))
        os.mkdir(os.path.join(scratch, PART_FINISH))
        outs = {n: os.path.join(scratch, PART_FACTS, n + ".parquet") for n in FACTS}
        outs.update({n: os.path.join(scratch, PART_FINISH, n + ".parquet") for n in have})
        compact_chunk(present, docs, chunk, FACTS, have, outs)
        # the run's traces and process_groups rows of these ranks, and what the reduce reads of each part.json
        # (all but the trace's header and the groups), so that it reads one file for the group, not 256
        write_run_table(rows_table([docs[r]["trace"] for r in chunk], TRACES_SCHEMA),
                       os.path.join(scratch, TRACES_FILE))
        write_run_table(groups_table([pg for r in chunk for pg in docs[r].get("process_groups") or ()]),
                       os.path.join(scratch, GROUPS_FILE))
        files = {}
        for folder in (PART_FACTS, PART_FINISH, ""):
            for e in sorted(os.listdir(os.path.join(scratch, folder))):
                rel = os.path.join(folder, e) if folder else e
                if e.endswith(".parquet"):
                    files[rel] = os.path.getsize(os.path.join(scratch, rel))
        doc = {"format": GROUP_FORMAT, "facts_key": key, "facts": list(FACTS), "finish": list(have),
               "ranks": ids, "files": files,
               "parts": {str(r): {k: (_light(v) if k == "trace" else v) for k, v in docs[r].items()
                                  if k in PART_KEYS} for r in chunk}}
        with open(os.path.join(scratch, GROUP_FILE), "wb") as f:
            f.write(msgspec.json.encode(doc))
            f.flush()
            os.fsync(f.fileno())
        put_in_place(run, scratch, dest, tag)
    return dest


def usable_group(parts: dict[int, str], chunk: list[int], key: str, names: list[str], seen: dict) -> dict | None:
    """The group of exactly the parts of ranks ``chunk`` as the reduce saw them (``seen``: {str(rank): its
    identity when the reduce began}), of the rules' key ``key`` and the facts ``names``, its files intact:
    {"dir": its directory, "docs": {rank: what the reduce reads of the part's part.json (read_part), less
    the trace's header and the process groups}}; None where there is no such group (the reduce then reads
    the parts)."""
    dest = _dest(parts, chunk)
    doc = _doc(dest) if dest else None
    if not doc or not _matches(doc, key, names, {str(r): seen[str(r)] for r in chunk}, dest):
        return None
    if set(doc.parts) != set(doc.ranks) or not all(f in doc.files for f in (TRACES_FILE, GROUPS_FILE)):
        return None
    return {"dir": dest, "docs": {int(r): dict(msgspec.structs.asdict(d), facts_key=key)
                                  for r, d in doc.parts.items()}}


def link_group(parts: dict[int, str], chunk: list[int], names: list[str], have: list[str], outs: dict[str, str],
               key: str, seen: dict) -> bool:
    """The reduce's partition ``chunk`` from its group's files, hard-linked to ``outs`` (copied where the
    file system has no hard links): True where a group of exactly these parts as the reduce saw them
    (``seen``, as usable_group), these facts and at least these finish tables exists, its files intact, else
    False (nothing written; the reduce compacts the parts)."""
    dest = _dest(parts, chunk)
    doc = _doc(dest) if dest else None
    if not doc or not _matches(doc, key, names, {str(r): seen[str(r)] for r in chunk}, dest):
        return False
    if not set(have) <= set(doc.finish):
        return False
    done = []
    try:
        for name, out in outs.items():
            folder = PART_FACTS if name in names else PART_FINISH
            link_or_copy(os.path.join(dest, folder, name + ".parquet"), out)
            done.append(out)
    except OSError:  # the group went meanwhile (made again by a writer): the parts, compacted here
        for out in done:
            with contextlib.suppress(OSError):
                os.unlink(out)
        return False
    return True


def _dest(parts: dict[int, str], chunk: list[int]) -> str | None:
    dirs = {os.path.dirname(parts[r]) for r in chunk}
    return group_dir(dirs.pop(), chunk[0], chunk[-1]) if len(dirs) == 1 else None


def _matches(doc: _Group, key: str, names: list[str], ids: dict, dest: str) -> bool:
    """``doc`` is the group of the parts ``ids``, of the rules' key ``key`` and the facts ``names``, and
    every file it lists is there at its size (a file truncated or replaced since is no group's)."""
    if doc.format != GROUP_FORMAT or doc.facts_key != key or doc.facts != list(names) or doc.ranks != ids:
        return False
    if not all(os.path.join(PART_FACTS, n + ".parquet") in doc.files for n in names):
        return False
    try:
        return all(os.path.getsize(os.path.join(dest, rel)) == size for rel, size in doc.files.items())
    except OSError:
        return False


def _ids_now(present: dict[int, str], chunk: list[int]) -> dict | None:
    try:
        return {str(r): identity(present[r]) for r in chunk}
    except OSError:
        return None


def _light(trace: dict) -> dict:
    return {k: v for k, v in trace.items() if k != "metadata"}


def _doc(dest: str) -> _Group | None:
    try:
        with open(os.path.join(dest, GROUP_FILE), "rb") as f:
            return msgspec.json.decode(f.read(), type=_Group)
    except (OSError, msgspec.DecodeError):  # (ValidationError is a DecodeError)
        return None


@contextlib.contextmanager
def _group_lock(cycle_dir: str, lo: int, hi: int):
    """An exclusive lock on the group (a file beside the parts, its name starting with a dot: never read as
    a part), waited for up to LOCK_WAIT_S: a writer that completes the group while another builds it then
    finds it made; one held longer (a writer stopped midway) leaves the group to the reduce (TimeoutError),
    never the training's exit waiting on it."""
    fd = os.open(os.path.join(cycle_dir, f".group-{lo:07d}-{hi:07d}.lock"), os.O_CREAT | os.O_RDWR, 0o644)
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"another writer held the group's lock for {LOCK_WAIT_S:.0f} s") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)
