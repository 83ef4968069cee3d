"""Which files make a run, and which rank each one is."""

from __future__ import annotations

import glob
import os
import re
import sys

from .errors import RankError, TraceFormatError, TracekitError, UsageError
from .layout.paths import is_run, to_open_as_run

TRACE_SUFFIXES = (".json", ".json.gz")
# torchtitan-style layout written by tracekit.profiler and read back here.
TRACE_PATH_TEMPLATE = "iteration_{step}/rank{rank}_trace.json.gz"
MAX_RANK = 1 << 31  # ranks are int64 in the run; no job comes near 2^31 ranks
_RANK_IN_NAME = re.compile(r"(?:rank|worker)[-_]?(\d+)", re.IGNORECASE)


def find_traces(paths: list[str]) -> list[str]:
    """Files, directories (searched recursively) and globs -> sorted absolute trace file paths."""
    found: list[str] = []
    for p in paths:
        p = os.fspath(p)
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                # never read a tracekit run (its manifest.json) or a half-built one as a trace
                dirs[:] = [d for d in dirs if ".tmp-" not in d and not is_run(os.path.join(root, d))]
                if is_run(root):
                    continue
                for f in files:
                    full = os.path.join(root, f)
                    if not f.endswith(TRACE_SUFFIXES):
                        continue
                    if os.path.isfile(full):  # follows links: a FIFO, a device, a looping or broken link is not
                        found.append(full)
                    else:
                        print(f"tracekit: skipping {full}: not a regular file", file=sys.stderr)
        elif os.path.isfile(p):
            found.append(p)
        elif os.path.exists(p) or os.path.islink(p):
            raise TraceFormatError(f"{p}: not a regular file (a FIFO, a device, or a link that leads nowhere); "
                                "give trace files or directories")
        else:
            matches = [m for m in _glob(p) if os.path.isfile(m)]
            if not matches:
                raise TraceFormatError(f"{p}: no such file or directory, and no file matches it as a glob")
            found += matches
    out = sorted(_one_name_each(found))
    if not out:
        runs = [str(p) for p in paths if os.path.isdir(p) and to_open_as_run(str(p))]
        if runs:  # (a run given where traces go: `tracekit ingest RUN -o X`)
            raise UsageError(f"{runs[0]}: a tracekit run, not traces: report on it as it is (tracekit report "
                                f"{runs[0]} summary), or derive its facts again with tracekit ingest --rederive "
                                f"{runs[0]}")
        raise UsageError(f"no trace files (.json, .json.gz) under {', '.join(map(str, paths))}: give the folder "
                            "your torch.profiler on_trace_ready handler (tensorboard_trace_handler, "
                            "tracekit.profiler.trace_handler) wrote them to, or the trace files")
    return out


def _glob(pattern: str) -> list[str]:
    """glob.glob(pattern, recursive=True), except that ``**`` enters each directory once, however many
    links lead to it: a link cycle (``a/loop -> a``) made it run for ever (one path per way round)."""
    if "**" not in pattern:
        return glob.glob(pattern)
    head, _, tail = pattern.partition("**")
    tail = tail.lstrip(os.sep)
    out = []
    for root in (glob.glob(head) if glob.has_magic(head) else [head]) if head else [os.curdir]:
        if not os.path.isdir(root):
            continue
        seen = set()
        for d, dirs, files in os.walk(root, followlinks=True):
            st = os.stat(d)
            if (st.st_dev, st.st_ino) in seen:
                dirs[:] = []
                continue
            seen.add((st.st_dev, st.st_ino))
            dirs[:] = sorted(x for x in dirs if not x.startswith("."))  # as glob: no hidden names
            here = os.path.relpath(d) if not head else d
            if not tail:  # "dir/**": everything under it
                out += [os.path.join(here, f) for f in files if not f.startswith(".")]
            else:
                out += _glob(os.path.join(glob.escape(here), tail))
    return out


def _one_name_each(files: list[str]) -> set[str]:
    """Absolute paths, one per file: the same file reached twice (through a link) is one input, not two
    traces claiming one rank."""
    by_file = {}
    for f in sorted(os.path.abspath(f) for f in files):
        by_file.setdefault(os.path.realpath(f), f)
    return set(by_file.values())


def rank_from_name(path: str) -> int | None:
    """The rank a file name states (rank-3, rank3, rank_3, worker3), or None."""
    m = _RANK_IN_NAME.search(os.path.basename(path))
    return int(m.group(1)) if m else None


def resolve_rank(path: str, header: dict, given: int | None = None, single: bool = False) -> tuple[int, str]:
    """(rank, source): an explicit rank, else distributedInfo.rank, else the file name, else rank 0 when
    the file is the only input (as HTA does); else an error."""
    if given is not None:
        return given, "option"
    info = header.get("distributedInfo")
    if isinstance(info, dict) and "rank" in info and info["rank"] is not None:
        r = info["rank"]
        if isinstance(r, str) and r.isdigit() and len(r) < 12:  # some writers quote it
            r = int(r)
        if type(r) is not int or not 0 <= r < MAX_RANK:
            raise RankError(f"{path}: distributedInfo.rank is {r!r}, not a rank (an integer from 0 to {MAX_RANK - 1}); "
                            f"give the rank: --rank {os.path.basename(path)}=N")
        return r, "distributedInfo"
    named = rank_from_name(path)
    if named is not None:
        if named >= MAX_RANK:
            raise RankError(f"{path}: the rank in its name, {named}, is too large; give the rank: "
                            f"--rank {os.path.basename(path)}=N")
        return named, "file name"
    if single:
        return 0, "single file"
    raise RankError(
        f"{path}: cannot tell which rank this trace is: it has no distributedInfo.rank and its name holds "
        "no rank number (rank-3, rank3, rank_3, worker3). Rename the file, or give the rank: "
        f"--rank {os.path.basename(path)}=N (the file's name or path; API: ranks={{path: N}})"
    )


def match_rank_options(given: dict, files: list[str]) -> dict[str, int]:
    """--rank FILE=N entries -> {absolute input path: N}. FILE is a path, or the bare name of one input;
    an entry that matches no input, or a name that several inputs share, is an error."""
    out: dict[str, int] = {}
    for key, rank in given.items():
        if type(rank) is not int or not 0 <= rank < MAX_RANK:
            raise RankError(f"--rank {key}={rank}: a rank is an integer from 0 to {MAX_RANK - 1}")
        full = os.path.abspath(key)
        if full in files:
            out[full] = rank
            continue
        same = [f for f in files if os.path.basename(f) == os.path.basename(key)] if os.sep not in str(key) else []
        if len(same) == 1:
            out[same[0]] = rank
        elif same:
            raise RankError(f"--rank {key}={rank}: {len(same)} inputs are named {key} ({', '.join(same[:4])}); "
                            "give the path instead")
        else:
            raise RankError(f"--rank {key}={rank}: no input is {key}; the inputs are "
                            f"{', '.join(os.path.basename(f) for f in files[:8])}{' ...' if len(files) > 8 else ''}")
    return out


_ITERATION = re.compile(r"(?:^|/)iteration_(\d+)(?:/|$)")


def iterations_of(files: list[str]) -> dict[int, list[str]]:
    """Files by profiling cycle, for the layout tracekit.profiler writes (DIR/iteration_N/...)."""
    out: dict[int, list[str]] = {}
    for f in files:
        m = _ITERATION.search(os.path.dirname(f).replace(os.sep, "/") + "/")
        if m:
            out.setdefault(int(m.group(1)), []).append(f)
    return out


def pick_iteration(files: list[str], iteration: int | None) -> list[str]:
    """Keep the files of one profiling cycle: the one asked for, or the only one there is. Several
    cycles in one input and none chosen is an error that lists them."""
    cycles = iterations_of(files)
    if iteration is not None:
        if iteration not in cycles:
            raise TracekitError(f"--iteration {iteration}: no iteration_{iteration} among the inputs; there are "
                                f"{_list_cycles(cycles) or 'no iteration_N directories'}")
        return cycles[iteration]
    if len(cycles) > 1:
        last = os.path.dirname(cycles[max(cycles)][0])
        while os.path.basename(last) != f"iteration_{max(cycles)}" and os.path.dirname(last) != last:
            last = os.path.dirname(last)
        shown = os.path.relpath(last) if not os.path.relpath(last).startswith("..") else last
        raise TracekitError(f"the inputs hold {len(cycles)} profiling cycles: {_list_cycles(cycles)}. A run is one "
                            f"cycle: give one cycle's directory (e.g. {shown}) instead, or ingest with "
                            "`tracekit ingest --iteration N` (torch.profiler.schedule(..., repeat=1) records one "
                            "cycle)")
    return files


def _list_cycles(cycles: dict[int, list[str]]) -> str:
    from .words import plural

    return ", ".join(f"iteration_{n} ({plural(len(fs), 'file', 'files')})" for n, fs in sorted(cycles.items()))


def check_unique_ranks(ranked: list[tuple[str, int]]) -> None:
    seen: dict[int, str] = {}
    for path, rank in ranked:
        if rank in seen:
            raise RankError(
                f"two traces claim rank {rank}: {seen[rank]} and {path}. A run holds one trace per rank; "
                "ingest them into separate runs, or give ranks explicitly with --rank FILE=N")
        seen[rank] = path
