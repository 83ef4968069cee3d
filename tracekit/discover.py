"""Which files make a run, and which rank each one is."""

from __future__ import annotations

import glob
import os
import re

from .errors import RankError, TracekitError

TRACE_SUFFIXES = (".json", ".json.gz")
# torchtitan-style layout written by tracekit.profiler and read back here.
TRACE_PATH_TEMPLATE = "iteration_{step}/rank{rank}_trace.json.gz"
_RANK_IN_NAME = re.compile(r"(?:rank|worker)[-_]?(\d+)", re.IGNORECASE)


def find_traces(paths: list[str]) -> list[str]:
    """Files, directories (searched recursively) and globs -> sorted absolute trace file paths."""
    found: list[str] = []
    for p in paths:
        p = os.fspath(p)
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                # never read a tracekit run (its manifest.json) or a half-built one as a trace
                dirs[:] = [d for d in dirs if ".tmp-" not in d and not _is_run(os.path.join(root, d))]
                if _is_run(root):
                    continue
                found += [os.path.join(root, f) for f in files if f.endswith(TRACE_SUFFIXES)]
        elif os.path.isfile(p):
            found.append(p)
        else:
            matches = [m for m in glob.glob(p, recursive=True) if os.path.isfile(m)]
            if not matches:
                raise TracekitError(f"{p}: no such file or directory, and no file matches it as a glob")
            found += matches
    out = sorted({os.path.abspath(f) for f in found})
    if not out:
        raise TracekitError(f"no trace files (.json, .json.gz) under {', '.join(map(str, paths))}")
    return out


def _is_run(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "manifest.json")) and os.path.isdir(
        os.path.join(directory, "events"))


def rank_from_name(path: str) -> int | None:
    """The rank a file name states (rank-3, rank3, rank_3, worker3), or None."""
    m = _RANK_IN_NAME.search(os.path.basename(path))
    return int(m.group(1)) if m else None


def resolve_rank(path: str, header: dict, given: int | None = None) -> tuple[int, str]:
    """(rank, source): an explicit rank, else distributedInfo.rank, else the file name; else an error."""
    if given is not None:
        return given, "option"
    info = header.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return info["rank"], "distributedInfo"
    named = rank_from_name(path)
    if named is not None:
        return named, "file name"
    raise RankError(
        f"{path}: cannot tell which rank this trace is: it has no distributedInfo.rank and its name holds "
        "no rank number (rank-3, rank3, rank_3, worker3). Rename the file, or give the rank: "
        f"--rank {os.path.basename(path)}=N (API: ranks={{path: N}})"
    )


def check_unique_ranks(ranked: list[tuple[str, int]]) -> None:
    seen: dict[int, str] = {}
    for path, rank in ranked:
        if rank in seen:
            raise RankError(
                f"two traces claim rank {rank}: {seen[rank]} and {path}. A run holds one trace per rank; "
                "ingest them into separate runs, or give ranks explicitly with --rank FILE=N")
        seen[rank] = path
