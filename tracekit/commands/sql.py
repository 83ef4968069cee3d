"""A query over a run, its result read as it is consumed (`tracekit sql`, `tracekit.sql`)."""

from __future__ import annotations

import contextlib

import pyarrow as pa

from ..errors import QueryError
from ..sandbox import DEFAULT_MEMORY_MB, process_limits, time_limit


class Result:
    """A query's result, read as it is consumed: ``schema``, iteration over pyarrow.RecordBatch, or
    ``read_all()`` for a pyarrow.Table. The run it was opened on closes when the batches end, on
    ``close()`` or on leaving a ``with`` block."""

    def __init__(self, run, query: str, timeout: float | None, memory_mb: int | None, unsafe: bool,
                 own_process: bool = False):
        self._batches = _batches(run, query, timeout, memory_mb, unsafe, own_process)
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


def _batches(run, query, timeout, memory_mb, unsafe, own_process=False):
    """The schema first, then the batches, all under the time limit (and the read-only limits unless
    ``unsafe``); the run is closed when this ends, however it ends. ``own_process``: the query is what this
    process is for (the CLI), so it may cap the process's memory and end it (sandbox.process_limits); else
    (the library) a read-only query runs in a process of its own that is limited so (sql_process)."""
    if not unsafe and not own_process:
        from ..sql_process import batches

        with contextlib.closing(run):
            schema, each = batches(run, query, None, memory_mb, timeout)
            yield schema
            yield from each
        return
    if unsafe:
        with contextlib.ExitStack() as stack:
            stack.callback(run.close)
            if own_process:
                stack.enter_context(process_limits(None, timeout))
            stack.enter_context(time_limit(run, timeout))
            schema, batches = run.batches(query)
            yield schema
            yield from batches
        return
    yield from limited_batches(run, query, None, memory_mb, timeout, command=True)


def limited_batches(run, query, params, memory_mb, timeout, command=False):
    """The read-only query in this process, which is the query's own (the CLI, or sql_process's child): the
    prompt's limits on the run, the process's memory capped and the process ended past its time limit.
    ``command``: messages name the command's options (--memory), else the library's (memory_mb)."""
    with contextlib.ExitStack() as stack:
        stack.callback(run.close)
        run.lock_down(memory_mb)
        stack.enter_context(process_limits(memory_mb, timeout))
        stack.enter_context(time_limit(run, timeout))
        with _memory_words(memory_mb, command):
            schema, batches = run.batches(query, params=params)
        yield schema
        with _memory_words(memory_mb, command):
            yield from batches


def memory_message(memory_mb, why: str, command: bool) -> str:
    mb = memory_mb or DEFAULT_MEMORY_MB
    limit, more = (f"--memory {mb} MB", "--memory MB") if command else (f"{mb} MB (memory_mb)", "memory_mb")
    return (f"the query needed more memory than {limit} allows ({why}); narrow it (WHERE, LIMIT, shorter "
            f"strings) or give it more with {more}")


@contextlib.contextmanager
def _memory_words(memory_mb, command):
    """DuckDB's out-of-memory error advises SET memory_limit, which the read-only prompt refuses: say
    what the prompt's user can do instead."""
    try:
        yield
    except QueryError as exc:
        if "Out of Memory Error" not in str(exc):
            raise
        why = str(exc).split("Out of Memory Error: ")[1].split(" Possible solutions")[0].split("\n")[0]
        raise QueryError(memory_message(memory_mb, why, command)) from None
    except MemoryError:  # (Python's, past the process's capped address space)
        raise QueryError(memory_message(memory_mb, "the process's address space is capped", command)) from None
