"""The rows of the reports computed in Python (their .sql headers name these: `-- @python`)."""

from __future__ import annotations

import pyarrow as pa

from ..table_meta import NOTE_KEY
from .critical import CRITICAL_SCHEMA, critical_path, thread_gap_note
from .from_run import path_replay
from .model import STEP_TABLE_SCHEMA

REPLAY_SCHEMA = STEP_TABLE_SCHEMA.append(pa.field("durations_only_ms", pa.float64()))


def _no_steps(run) -> bool:
    """The traces hold no ProfilerStep: these reports (rows per step) have none, said before the graph is
    read (10,000 ranks: minutes of building it to find no step)."""
    return not run.sql("SELECT 1 FROM steps LIMIT 1").num_rows


def replay_rows(run, params: dict) -> pa.Table:
    """tracekit report RUN replay: per rank and step, measured against replayed on the graph whose step
    threads are split (graph/split.py: the graph whatif and advise replay, so the three agree), and the
    replay with durations only (every positive gap and every slack 0: what the graph's dependencies alone
    explain)."""
    import numpy as np

    from .split import split

    if _no_steps(run):
        return REPLAY_SCHEMA.empty_table()
    sp = split(run)
    rep = sp.replay()
    table = rep.steps()
    bare = sp.graph.replay(gaps=np.minimum(sp.graph.gap_ns, 0)).steps()
    by = {(r, s): v for r, s, v in zip(bare.column("rank").to_pylist(), bare.column("step").to_pylist(),
                                        bare.column("replayed_ms").to_pylist(), strict=True)}
    col = [by.get((r, s)) for r, s in zip(table.column("rank").to_pylist(), table.column("step").to_pylist(),
                                           strict=True)]
    return table.append_column("durations_only_ms", pa.array(col, pa.float64()))


def critical_path_rows(run, params: dict) -> pa.Table:
    """tracekit report RUN critical_path: per step, the chain of work that sets its end."""
    if _no_steps(run):
        return CRITICAL_SCHEMA.empty_table()
    table = critical_path(path_replay(run))
    note = thread_gap_note(table.to_pylist())
    if note:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), NOTE_KEY: note.encode()})
    return table
