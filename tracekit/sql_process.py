"""A read-only query in a process of its own, for the library (``tracekit.sql``, a ``Run.read_only()``).

The command's limits hold only in a process that is the query's (sandbox.process_limits): a string
function's values are allocated outside DuckDB's memory limit, and one long call does not see an
interrupt. A library caller's process is not the query's, so the query runs in a child that is: it opens
the same version, applies the prompt's limits and the process limits, and streams the result back as
Arrow IPC; its errors come back as the same exceptions. The parent ends the child if it outlives its time
limit and grace (the child's own watchdog should have), or when the caller interrupts it.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import threading

from .errors import QueryError, QueryTimeout, TracekitError
from .sandbox import GRACE_S, timeout_message

_ERROR = "tracekit-sql-error "  # the child's last stderr line when it fails: this and a JSON object
_KILL_AFTER_S = 5.0  # past the time limit and the child's own grace, the parent ends it


def batches(run, query: str, params, memory_mb: int | None, timeout: float | None):
    """(schema, iterator of pyarrow.RecordBatch) of ``query`` on ``run``'s version in a limited child."""
    import pyarrow as pa

    request = {"version": run.version, "name": run.name, "size_buckets": run.size_buckets, "query": query,
               "params": params, "memory_mb": memory_mb, "timeout": timeout}
    tracekit_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (tracekit_root, os.environ.get("PYTHONPATH")) if p))
    child = subprocess.Popen([sys.executable, "-m", "tracekit.sql_child"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    run._children.add(child)
    err: list[bytes] = []
    reader = threading.Thread(target=lambda: err.append(child.stderr.read()), daemon=True)
    reader.start()
    expired = threading.Event()
    watch = None
    if timeout:
        watch = threading.Timer(timeout + GRACE_S + _KILL_AFTER_S, lambda: (expired.set(), child.kill()))
        watch.daemon = True
        watch.start()

    def finish(failed: bool):
        """The child's end: its error raised, if any (``failed``: the caller stopped reading, or its own
        error is on its way: the child is ended, and nothing more is raised)."""
        if watch:
            watch.cancel()
        if failed:
            child.kill()
        rc = child.wait()
        reader.join()
        run._children.discard(child)
        child.stdout.close()
        if failed:
            return
        if expired.is_set():
            raise QueryTimeout(timeout_message(timeout))
        if rc == 0:
            return
        raise _error(rc, b"".join(err).decode(errors="replace"), run, memory_mb)

    try:
        child.stdin.write(pickle.dumps(request))
        child.stdin.close()
        stream = pa.ipc.open_stream(child.stdout)
    except (OSError, pa.ArrowInvalid):
        finish(failed=False)  # the child failed before its result began: its error
        raise QueryError(f"SQL failed on run {run.name}: the query's process gave no result") from None

    def each():
        try:
            yield from stream
        except (OSError, pa.ArrowInvalid):
            finish(failed=False)
            raise QueryError(f"SQL failed on run {run.name}: the query's process ended mid-result") from None
        except BaseException:
            finish(failed=True)
            raise
        finish(failed=False)

    return stream.schema, each()


def _error(rc: int, stderr: str, run, memory_mb) -> BaseException:
    """The exception the child's exit and stderr stand for."""
    import duckdb

    lines = stderr.strip().splitlines()
    if lines and lines[-1].startswith(_ERROR):
        doc = json.loads(lines[-1][len(_ERROR):])
        kind = {"QueryTimeout": QueryTimeout, "QueryError": QueryError}.get(doc["kind"], TracekitError)
        if doc["kind"] == "Interrupted":
            return duckdb.InterruptException(doc["message"])
        return kind(doc["message"])
    if lines and lines[-1].startswith("error: ") and rc == QueryTimeout.exit_code:  # the child's watchdog
        return QueryTimeout(lines[-1][len("error: "):])
    if rc < 0:  # ended by a signal: the caller's interrupt (Run.interrupt), or the kernel's out-of-memory killer
        return duckdb.InterruptException(f"the query's process was ended (signal {-rc})")
    return QueryError(f"SQL failed on run {run.name}: the query's process ended with exit code {rc}"
                      + (f" ({lines[-1]})" if lines else ""))
