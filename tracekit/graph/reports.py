"""The rows of the reports computed in Python (their .sql headers name these: `-- @python`)."""

from __future__ import annotations

import pyarrow as pa

from .critical import critical_path
from .from_run import build


def replay_rows(run, params: dict) -> pa.Table:
    """tracekit report RUN replay: per rank and step, measured against replayed."""
    return build(run).replay().steps()


def critical_path_rows(run, params: dict) -> pa.Table:
    """tracekit report RUN critical_path: per step, the chain of work that sets its end."""
    return critical_path(build(run).replay())
