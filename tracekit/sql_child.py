"""The child's side of sql_process: one read-only query in a process of its own (``python -m
tracekit.sql_child``), a module apart so that sql_process (which store and commands/sql call) does not
import them back."""

from __future__ import annotations

import json
import pickle
import sys

from .errors import TracekitError
from .sql_process import _ERROR


def main() -> int:
    """The child's side: one request on stdin, the result as Arrow IPC on stdout, an error as its last line
    on stderr."""
    import duckdb
    import pyarrow as pa

    from .commands.sql import limited_batches, memory_message
    from .store import Run

    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but the result on the result's pipe
    request = pickle.loads(sys.stdin.buffer.read())
    try:
        run = Run(request["version"], size_buckets=request["size_buckets"])
        run.name = request["name"]
        gen = limited_batches(run, request["query"], request["params"], request["memory_mb"], request["timeout"])
        schema = next(gen)
        with pa.ipc.new_stream(out, schema) as writer:
            for batch in gen:
                writer.write_batch(batch)
    except (TracekitError, duckdb.InterruptException, MemoryError) as exc:
        kind = ("Interrupted" if isinstance(exc, duckdb.InterruptException) else
                "QueryError" if isinstance(exc, MemoryError) else type(exc).__name__)
        message = (memory_message(request["memory_mb"], "the process's address space is capped", False)
                   if isinstance(exc, MemoryError) else str(exc))
        sys.stderr.write(_ERROR + json.dumps({"kind": kind, "message": message}) + "\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
