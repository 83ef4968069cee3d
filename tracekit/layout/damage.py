"""A run's own file that cannot be read (removed or cut short by hand since tracekit wrote it), in one line
that names the run, the file and the command that makes it again: said the same way by what opens a run
(store.Run) and what derives its facts again (ingestion/rederive.py)."""

from __future__ import annotations

import contextlib
import os

from ..errors import RunDamaged
from .paths import EVENTS_DIR, packed_files, rank_dir

AGAIN = "ingest the traces again with --force"  # what makes the events and tables again (they are the traces')
# a run reduced from rank parts (ingest --reduce) has no traces of its own: its events and tables are the parts'
AGAIN_PARTS = ("make the rank's part again from its trace (python -m tracekit.ingestion.rank_part TRACE RUN) and "
               "reduce again (tracekit ingest --reduce RUN)")


def of_parts(manifest: dict | None) -> bool:
    """The run of ``manifest`` was reduced from rank parts (ingest --reduce), not ingested from traces."""
    return ((manifest or {}).get("executor") or {}).get("kind") == "rank parts"


def again(manifest: dict | None) -> str:
    """What makes a damaged run's files again: its parts, where the run was reduced from rank parts, else
    its traces."""
    return AGAIN_PARTS if of_parts(manifest) else AGAIN


@contextlib.contextmanager
def damaged(name: str, version: str, what: str, fix: str, errors: tuple, *, path: str | None = None,
            within: str | None = None):
    """``errors`` raised inside become a RunDamaged (a RunError): ``name`` (the run as the user named it):
    ``what`` cannot be read, with the first line of the reader's words (the file named relative to
    ``version``, ``path`` added where they do not name it); then ``fix``. ``within``: only an error that
    names a file under that folder (another is raised as it was: a query's own error is not the file's)."""
    try:
        yield
    except errors as exc:
        lines = str(exc).splitlines()
        why = lines[0] if lines else type(exc).__name__
        if within is not None and within.rstrip(os.sep) + os.sep not in why:
            raise
        if path is not None and path not in why:
            why = f"{path}: {why}"
        why = why.replace(version.rstrip(os.sep) + os.sep, "")
        raise RunDamaged(f"{name}: {what} cannot be read ({why}): a file of the run was changed or removed since "
                       f"tracekit wrote it; {fix}") from None


def rank_without_events(version: str, ranks, *, none_at_all: bool = False) -> int | None:
    """The first of ``ranks`` whose events folder (or packed file) is not in ``version`` (an empty rank has
    one too: one deleted by hand would make its facts, or the graph's replay, from nothing). One listing,
    whatever the ranks. No events folder at all (a copy of the run without them): None, said where they
    are read; with ``none_at_all``, the first rank."""
    try:
        present = set(os.listdir(os.path.join(version, EVENTS_DIR)))
    except OSError:
        if not none_at_all:
            return None
        present = set()
    packed = [(lo, hi) for lo, hi, _ in packed_files(version)]
    for rank in ranks:
        if os.path.basename(rank_dir(version, rank)) not in present and not any(lo <= rank <= hi for lo, hi in packed):
            return rank
    return None


def events_missing(name: str, version: str, rank: int, consequence: str, fix: str = AGAIN) -> RunDamaged:
    """The error for rank ``rank`` of run ``name`` without its events folder (rank_without_events):
    ``consequence`` says what cannot be done without them; then how to make them again (``fix``: again())."""
    return RunDamaged(f"{name}: the events of rank {rank} are missing ({rank_dir(version, rank)}); {consequence}: "
                      f"{fix}")
