"""A query over a run, its result read as it is consumed (`tracekit sql`, `tracekit.sql`)."""

from __future__ import annotations

import contextlib

import pyarrow as pa

from ..sandbox import time_limit


class Result:
    """A query's result, read as it is consumed: ``schema``, iteration over pyarrow.RecordBatch, or
    ``read_all()`` for a pyarrow.Table. The run it was opened on closes when the batches end, on
    ``close()`` or on leaving a ``with`` block."""

    def __init__(self, run, query: str, timeout: float | None, memory_mb: int | None, unsafe: bool):
        self._batches = _batches(run, query, timeout, memory_mb, unsafe)
        self.schema: pa.Schema = next(self._batches)  # the query runs here: its errors are raised here

    def __iter__(self):
        return self._batches

    def read_all(self) -> pa.Table:
        return pa.Table.from_batches(list(self._batches), schema=self.schema)

    def close(self) -> None:
        self._batches.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _batches(run, query, timeout, memory_mb, unsafe):
    """The schema first, then the batches, all under the time limit (and the read-only limits unless
    ``unsafe``); the run is closed when this ends, however it ends."""
    with contextlib.ExitStack() as stack:
        stack.callback(run.close)
        if not unsafe:
            run.read_only(memory_mb)
        stack.enter_context(time_limit(run, timeout))
        schema, batches = run.batches(query)
        yield schema
        yield from batches
