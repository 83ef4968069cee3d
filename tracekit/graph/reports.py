"""The rows of the reports computed in Python (their .sql headers name these: `-- @python`)."""

from __future__ import annotations

import pyarrow as pa

from ..table_meta import NOTE_KEY
from .critical import critical_path, thread_gap_note
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
