"""The rows of the reports computed in Python (their .sql headers name these: `-- @python`)."""

from __future__ import annotations

import pyarrow as pa

from ..table_meta import NOTE_KEY
from .critical import GAP_NAME, critical_path
from .from_run import build, path_replay


def replay_rows(run, params: dict) -> pa.Table:
    """tracekit report RUN replay: per rank and step, measured against replayed."""
    return build(run).replay().steps()


def critical_path_rows(run, params: dict) -> pa.Table:
    """tracekit report RUN critical_path: per step, the chain of work that sets its end."""
    table = critical_path(path_replay(run))
    note = thread_gap_note(table.to_pylist())
    if note:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), NOTE_KEY: note.encode()})
    return table


def thread_gap_note(rows: list[dict]) -> str | None:
    """Where most of the path is time between the CPU ops a trace records on a thread: say what the path
    cannot see there (the report and the page both)."""
    total = sum(r["ns"] for r in rows)
    gaps = sum(r["ns"] for r in rows if (r["name"] or "").startswith(GAP_NAME["thread"]))
    if not total or gaps < total / 2:
        return None
    return (f"{100 * gaps / total:.0f} % of the path is time between the CPU ops the trace records on a thread "
            "('CPU between ops'): the trace does not say what the thread did or waited for there (a wait for "
            "another rank's collective inside an unrecorded call, data loading, a sleep), so the path cannot "
            "follow it to another rank; `tracekit report RUN breakdown` (waiting, starved) and `tracekit advise` "
            "(which splits these gaps by the other ranks' pace) say who waited for whom")
