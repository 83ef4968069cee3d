"""The rows of the reports computed in Python (their .sql headers name these: `-- @python`)."""

from __future__ import annotations

import pyarrow as pa

from ..table_meta import NOTE_KEY
from .critical import CRITICAL_SCHEMA, critical_path, thread_gap_note
from .from_run import build, path_replay
from .model import STEP_TABLE_SCHEMA


def _no_steps(run) -> bool:
    """The traces hold no ProfilerStep: these reports (rows per step) have none, said before the graph is
    read (10,000 ranks: minutes of building it to find no step)."""
    return not run.sql("SELECT 1 FROM steps LIMIT 1").num_rows


def replay_rows(run, params: dict) -> pa.Table:
    """tracekit report RUN replay: per rank and step, measured against replayed."""
    if _no_steps(run):
        return STEP_TABLE_SCHEMA.empty_table()
    return build(run).replay().steps()


def critical_path_rows(run, params: dict) -> pa.Table:
    """tracekit report RUN critical_path: per step, the chain of work that sets its end."""
    if _no_steps(run):
        return CRITICAL_SCHEMA.empty_table()
    table = critical_path(path_replay(run))
    note = thread_gap_note(table.to_pylist())
    if note:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), NOTE_KEY: note.encode()})
    return table
