"""Where each part of a run directory lives (see tracekit/layout/__init__.py for the picture)."""

from __future__ import annotations

import glob
import json
import os
import re

MANIFEST = "manifest.json"
FACTS_DIR = "facts"
EVENTS_DIR = "events"
TABLE_FILES = {"traces": "traces.parquet", "process_groups": "process_groups.parquet"}


def manifest_path(run: str) -> str:
    return os.path.join(run, MANIFEST)


RUN_FORMAT = "tracekit run"  # the manifest's "format": what makes a version a run's, not its file names

# The run directory itself (see tracekit/layout/__init__.py): the marker tracekit writes when it makes the
# directory, the file naming the live version, the versions, the writer's lock, what is being removed.
MARKER = "tracekit-run.json"
MARKER_FORMAT = "tracekit run directory"
CURRENT = "CURRENT"
VERSIONS_DIR = "versions"
WRITER_LOCK = "writer.lock"
TRASH_DIR = "trash"
_VERSION_NAME = re.compile(r"^v-[0-9]+-[0-9]+$")


_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")


def is_url(path) -> bool:
    """``path`` is a URL (scheme://...), not a local path."""
    return isinstance(path, str) and bool(_URL.match(path))


def refuse_url(path: str, error=None) -> None:
    """A run is a directory on a file system or an object store's ``s3://bucket/prefix`` (layout/remote.py);
    any other URL given as one (``gs://``, ``file://``) is refused (``error``: the TracekitError class to
    raise), never taken for a local folder named ``gs:``. Callers handle an s3:// URL before this."""
    if isinstance(path, str) and _URL.match(path):
        from ..errors import TracekitError

        raise (error or TracekitError)(
            f"{path}: a URL tracekit does not read or write (a run is a directory on a file system, or s3://BUCKET/"
            "PREFIX in an S3-compatible object store); write the run to a local or shared directory, then copy it "
            "there whole, or mount that storage and give its path")


# Rank parts (tracekit.profiler.trace_handler(DIR, run=RUN)): each rank's events and per-rank facts, made
# where the rank was traced, kept beside the versions until a reduce builds a version from them
# (ingestion/rank_part.py writes one, ingestion/reduce_parts.py reads them).
PARTS_DIR = "parts"
PART_FILE = "part.json"  # what the part holds: its trace's row, process groups, cycle (written inside, last)
PART_EVENTS = "events"
PART_FACTS = "facts"
PART_FINISH = "finish"  # the finish's per-rank tables (derive.RANK_FINISH), made in the part: the reduce reads them
_PART_NAME = re.compile(r"^rank-([0-9]+)$")
_CYCLE_NAME = re.compile(r"^iteration_([0-9]+)$")


def parts_dir(run: str) -> str:
    return os.path.join(run, PARTS_DIR)


def part_path(run: str, rank: int, iteration: int | None) -> str:
    """RUN/parts/iteration_S/rank-R (RUN/parts/rank-R for a trace of no profiling cycle)."""
    cycle = () if iteration is None else (f"iteration_{iteration}",)
    return os.path.join(parts_dir(run), *cycle, f"rank-{rank}")


def part_scratch(run: str, tag: str) -> str:
    """Where a rank's part is built before it is renamed into place (a dot: never read as a part)."""
    return os.path.join(parts_dir(run), f".tmp-{tag}")


def list_parts(run: str) -> dict[int | None, dict[int, str]]:
    """The complete rank parts of ``run``: {iteration (None: no cycle): {rank: its directory}}."""
    out: dict[int | None, dict[int, str]] = {}

    def scan(d: str, cycle: int | None) -> None:
        for e in _sorted_listdir(d):
            if (m := _PART_NAME.match(e)) and os.path.isfile(os.path.join(d, e, PART_FILE)):
                out.setdefault(cycle, {})[int(m.group(1))] = os.path.join(d, e)
            elif cycle is None and (m := _CYCLE_NAME.match(e)):
                scan(os.path.join(d, e), int(m.group(1)))

    scan(parts_dir(run), None)
    return out


def _sorted_listdir(d: str) -> list[str]:
    try:
        return sorted(os.listdir(d))
    except OSError:
        return []


def marker_path(run: str) -> str:
    return os.path.join(run, MARKER)


def current_path(run: str) -> str:
    return os.path.join(run, CURRENT)


def versions_dir(run: str) -> str:
    return os.path.join(run, VERSIONS_DIR)


def lock_path(run: str) -> str:
    return os.path.join(run, WRITER_LOCK)


def trash_dir(run: str) -> str:
    return os.path.join(run, TRASH_DIR)


def version_path(run: str, name: str) -> str:
    return os.path.join(run, VERSIONS_DIR, name)


def is_version_name(name: str) -> bool:
    return bool(_VERSION_NAME.match(name))


def current_name(run: str) -> str | None:
    """The live version's name that ``run/CURRENT`` holds (``v-NS-PID``), or None where there is no such
    file or it holds anything else (a path, ``..``: never followed)."""
    try:
        with open(current_path(run)) as f:
            name = f.read(256).strip()
    except OSError:
        return None
    return name if is_version_name(name) else None


def is_being_made(names) -> bool:
    """A directory holding only these entries is one tracekit is making (or one a killed process left at
    that point): its writer lock and the marker's temporary file before its rename, nothing of anyone
    else's. (A check that saw the temporary file as foreign refused a run another process was filling.)"""
    return all(n == WRITER_LOCK or n.startswith(MARKER + ".tmp-") for n in names)


def has_marker(run: str) -> bool:
    """``run`` carries the marker tracekit writes into every directory it makes (its format tag)."""
    try:
        with open(marker_path(run)) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("format") == MARKER_FORMAT and isinstance(doc.get("id"), str)


def is_version(directory: str) -> bool:
    """``directory`` is one complete build of a run: a manifest.json that tracekit wrote (its "format" marker,
    or for runs written before the marker, tracekit's own keys) beside an events directory; the manifest is
    written last, so a half-built one has none. A file that merely has the name (a web app's manifest.json)
    never makes a directory a run that ingest replaces."""
    try:
        with open(manifest_path(directory)) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return False
    return written_by_tracekit(doc) and os.path.isdir(os.path.join(directory, EVENTS_DIR))


def is_run(directory: str) -> bool:
    """``directory`` is a complete tracekit run: its marker and a CURRENT naming a complete version, or a run
    of an earlier layout (a link to its version, or the version itself: manifest.json at the top)."""
    if has_marker(directory):
        name = current_name(directory)
        return name is not None and is_version(version_path(directory, name))
    return is_version(directory)


def has_layout(directory: str) -> bool:
    """``directory`` has a tracekit run's own names, whole or damaged: its marker file (readable or not), or
    versions/ holding a version (v-NS-PID). Reading it as traces would only call its manifest.json 'not a
    trace'."""
    if os.path.exists(marker_path(directory)):
        return True
    try:
        return any(is_version_name(n) for n in os.listdir(versions_dir(directory)))
    except OSError:
        return False


def to_open_as_run(directory: str) -> bool:
    """A path to open as a run, not as traces to ingest: a run, or one with tracekit's layout whose manifest
    cannot be read (opening it says so)."""
    return is_run(directory) or has_layout(directory) or all(
        os.path.exists(os.path.join(directory, p)) for p in (MANIFEST, EVENTS_DIR, TABLE_FILES["traces"]))


def written_by_tracekit(doc) -> bool:
    """A manifest document is tracekit's: its marker and a schema version (earlier runs: tracekit's keys)."""
    return isinstance(doc, dict) and isinstance(doc.get("schema_version"), int) and (
        doc.get("format") == RUN_FORMAT
        or (isinstance(doc.get("tracekit_version"), str) and isinstance(doc.get("inputs"), list)))


def table_path(run: str, name: str) -> str:
    """traces.parquet or process_groups.parquet of a run."""
    return os.path.join(run, TABLE_FILES[name])


def events_glob(run: str) -> str:
    """Every events part of a run's rank folders (hive-partitioned by rank, events/rank=R/), as a glob
    pattern: the run's own path escaped (a '[' in it is a character class to a glob: no file matched)."""
    return os.path.join(glob.escape(run), EVENTS_DIR, "rank=*", "*.parquet")


PACKED_DIR = "packed"  # events/packed/ranks-LO-HI.parquet: the events of many small ranks, a rank column each


def packed_dir(run: str) -> str:
    return os.path.join(run, EVENTS_DIR, PACKED_DIR)


def packed_glob(run: str) -> str:
    return os.path.join(glob.escape(packed_dir(run)), "*.parquet")


def packed_files(run: str) -> list[tuple[int, int, str]]:
    """[(first rank, last rank, path)] of a run's packed events files (tracekit/pack_events.py), in rank
    order; a rank in that range whose folder events/rank=R/ exists is not in the file."""
    try:
        names = os.listdir(packed_dir(run))
    except (FileNotFoundError, NotADirectoryError):
        return []
    out = []
    for n in names:
        m = _PACKED_NAME.match(n)
        if m:
            out.append((int(m.group(1)), int(m.group(2)), os.path.join(packed_dir(run), n)))
    return sorted(out)


_PACKED_NAME = re.compile(r"^ranks-([0-9]+)-([0-9]+)\.parquet$")


def is_packed(path: str) -> bool:
    """A packed events file (holding a rank column), not one rank's own part."""
    return os.path.basename(os.path.dirname(path)) == PACKED_DIR and bool(_PACKED_NAME.match(os.path.basename(path)))


def events_files(run: str) -> list[str]:
    """Every events file of a run (rank folders and packed files), as paths."""
    return glob.glob(events_glob(run)) + [p for _, _, p in packed_files(run)]


def spill_dir(where: str, tag: str = "") -> str:
    """A derive connection's spill directory in ``where`` (a version being built, or a rank's facts
    directory): ``_spill`` or ``_spill-TAG``."""
    return os.path.join(where, f"_spill-{tag}" if tag else "_spill")


def rank_facts_scratch(run: str, rank: int) -> str:
    """Where one rank's facts are derived before place_facts moves them into facts/NAME/."""
    return os.path.join(run, f"_facts-{rank}")


def ranks_file(lo: int, hi: int) -> str:
    """The file name of a fact's part holding ranks LO to HI (compaction's and the finish's alike)."""
    return f"ranks-{lo:07d}-{hi:07d}.parquet"


def rank_dir(run: str, rank: int) -> str:
    return os.path.join(run, EVENTS_DIR, f"rank={rank}")


def rank_parts(run: str, rank: int) -> list[str]:
    """The Parquet files of one rank's events in a run (one, or two when two writers shared the work), or
    the packed file that holds them (layout.bind.rank_events reads that rank's rows of it); raises
    FileNotFoundError where neither is there."""
    d = rank_dir(run, rank)
    try:
        return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".parquet"))
    except FileNotFoundError:
        for lo, hi, path in packed_files(run):
            if lo <= rank <= hi:
                return [path]
        raise


def staging_part(run: str, i: int) -> str:
    """Where ingest's task ``i`` writes its events before they are placed by rank."""
    return os.path.join(run, EVENTS_DIR, "_parts", f"part-{i:05d}.parquet")


def part_facts_dir(part: str) -> str:
    """Where the task that wrote events part ``part`` writes its rank's facts (NAME.parquet each)."""
    return part[:-len(".parquet")] + "-facts"


def make_leaf_dir(path: str) -> None:
    """Create ``path`` whose parent must exist (never its parents): a task that outlives its ingest (a Dask
    worker whose scheduler died mid-task) fails to write instead of bringing back a build that was
    already removed."""
    try:
        os.mkdir(path)
    except FileExistsError:
        pass


def facts_dir(run: str, name: str) -> str:
    return os.path.join(run, FACTS_DIR, name)


def facts_file(run: str, name: str, rank=None) -> str:
    """facts/NAME/all.parquet (compacted, or derived for the whole run) or facts/NAME/rank-R.parquet."""
    return os.path.join(facts_dir(run, name), "all.parquet" if rank is None else f"rank-{rank}.parquet")


def facts_glob(run: str, name: str) -> str:
    return os.path.join(glob.escape(facts_dir(run, name)), "*.parquet")


def place_facts(rank_facts: str, run: str, rank, names, whole_run_names=()) -> None:
    """Move one rank's fact files (``rank_facts/NAME.parquet``) into the run's layout:
    facts/NAME/rank-R.parquet (``rank`` 'LO-HI' for a batch of ranks derived together:
    facts/NAME/rank-LO-HI.parquet); those of ``whole_run_names`` (derived there because the run is this
    rank) become facts/NAME/all.parquet."""
    for name in names:
        os.makedirs(facts_dir(run, name), exist_ok=True)
        os.replace(os.path.join(rank_facts, name + ".parquet"), facts_file(run, name, rank))
    for name in whole_run_names:
        if os.path.isfile(os.path.join(rank_facts, name + ".parquet")):
            os.makedirs(facts_dir(run, name), exist_ok=True)
            os.replace(os.path.join(rank_facts, name + ".parquet"), facts_file(run, name))
    os.rmdir(rank_facts)


def open_lock_file(path: str):
    """A lock file opened for reading and writing, made if missing; never through a symbolic link (one
    planted there would have the writer's pid written into whatever it points to)."""
    import errno

    from ..errors import TracekitError

    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise TracekitError(f"{path}: a symbolic link where tracekit keeps its lock file; nothing was written "
                                "through it. Look at what it points to and remove the link") from None
        raise
    return os.fdopen(fd, "a+")
