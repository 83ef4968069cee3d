"""The read-only SQL prompt (``tracekit sql`` without --unsafe; ``tracekit.sql`` and ``Run.read_only()`` in
Python, which run each query in a process of their own held to the same limits: sql_process.py).

A query from the prompt may read the run and nothing else, and cannot change anything:

- only SELECT statements, and EXPLAIN of a SELECT (EXPLAIN ANALYZE runs its statement, so the statement
  inside an EXPLAIN is checked like any other);
- DuckDB reads files only in the run's directory (``enable_external_access`` off, ``allowed_directories``
  the run) and the run holds no symbolic link (a link would lead the file check out of the run);
- DuckDB's spill files go to a private directory of this process (removed on close), never ``./.tmp``;
- a memory limit, and a time limit that interrupts the query; in the ``tracekit sql`` process, also a cap
  on the process's address space and a watchdog that ends it (``process_limits``): a string function's
  values are allocated outside DuckDB's memory limit, and one long call does not see an interrupt;
- no extension installed or loaded, and the configuration locked so that no statement can undo this.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import threading

import duckdb

from .errors import QueryError, QueryTimeout
from .spill import spill_dir

# the statement kinds a read-only prompt runs (SUMMARIZE, DESCRIBE, SHOW, VALUES, FROM ... are SELECTs)
_READ_ONLY = {duckdb.StatementType.SELECT}
_UNSAFE_HINT = ("`tracekit sql --unsafe` lifts every limit (writes, other files, extensions), or use the "
                "Python API")

DEFAULT_MEMORY_MB = 2048
DEFAULT_TIMEOUT_S = 300
HEADROOM_MB = 512  # address space past what the process maps and --memory: Arrow's batches, the output
GRACE_S = 3.0  # how long a query may run on after its time limit's interrupt before the process ends


def check_statements(query: str) -> None:
    """Refuse a query unless each of its statements only reads (an EXPLAIN: the statement it explains)."""
    for kind in _kinds(query):
        if kind not in _READ_ONLY:
            name = str(kind).split(".")[-1]
            raise QueryError(f"tracekit sql only reads the run: a {name} statement is not allowed here (SELECT "
                             f"and EXPLAIN of a SELECT are); {_UNSAFE_HINT}")


def _kinds(query: str, depth: int = 0) -> list:
    con = duckdb.connect()
    try:
        statements = con.extract_statements(query)
    except duckdb.Error as exc:
        raise QueryError(f"SQL failed: {str(exc).splitlines()[0]}") from None
    finally:
        con.close()
    kinds = []
    for s in statements:
        if s.type == duckdb.StatementType.EXPLAIN and depth < 4:
            inner = _explained(s.query)
            if inner is None:
                raise QueryError("tracekit sql could not tell which statement this EXPLAIN explains; "
                                 f"write EXPLAIN SELECT ...; {_UNSAFE_HINT}")
            kinds += _kinds(inner, depth + 1)
        else:
            kinds.append(s.type)
    return kinds


def _explained(text: str) -> str | None:
    """The statement an ``EXPLAIN [ANALYZE | (options)] statement`` explains, or None if unclear."""
    tokens = [(pos, kind) for pos, kind in duckdb.tokenize(text) if kind != duckdb.token_type.comment]

    def word(i):
        pos = tokens[i][0]
        end = tokens[i + 1][0] if i + 1 < len(tokens) else len(text)
        return text[pos:end].strip().upper()

    i = 0
    if not tokens or word(0) != "EXPLAIN":
        return None
    i = 1
    if i < len(tokens) and word(i).startswith("("):  # EXPLAIN (ANALYZE, FORMAT json) statement
        depth = 0
        while i < len(tokens):
            w = word(i)
            depth += w.count("(") - w.count(")")
            i += 1
            if depth <= 0:
                break
    if i < len(tokens) and word(i) in ("ANALYZE", "ANALYSE"):
        i += 1
    return text[tokens[i][0]:] if i < len(tokens) else None


def refuse_links(run_dir: str) -> None:
    """A symbolic link inside the run would lead DuckDB's directory check out of it
    (``RUN/link/../etc/passwd`` is inside RUN by name, in /etc in fact): tracekit writes none, so refuse."""
    for root, dirs, files in os.walk(run_dir):
        for name in dirs + files:
            p = os.path.join(root, name)
            if os.path.islink(p):
                raise QueryError(f"{p}: a symbolic link inside the run; the read-only prompt refuses runs "
                                 "with links (they reach files outside it): remove it, or use --unsafe")


def lock_down(con: duckdb.DuckDBPyConnection, run_dir: str, memory_mb: int | None = None) -> str:
    """Restrict ``con`` to reading ``run_dir``; returns the private spill directory (remove it on close)."""
    refuse_links(run_dir)
    spill = spill_dir("tracekit-sql-", make=True)
    con.execute(f"SET temp_directory = {_literal(spill)}")
    con.execute(f"SET memory_limit = '{int(memory_mb or DEFAULT_MEMORY_MB)}MB'")
    # the run, and the run as the views' glob patterns spell it (a '[' in its path escaped as '[[]')
    dirs = {run_dir.rstrip(os.sep) + os.sep, glob.escape(run_dir.rstrip(os.sep)) + os.sep}
    con.execute(f"SET allowed_directories = [{', '.join(_literal(d) for d in sorted(dirs))}]")
    for setting in ("enable_external_access", "autoinstall_known_extensions", "autoload_known_extensions"):
        con.execute(f"SET {setting} = false")
    con.execute("SET lock_configuration = true")
    return spill


def remove_spill(spill: str | None) -> None:
    if spill:
        shutil.rmtree(spill, ignore_errors=True)


@contextlib.contextmanager
def time_limit(con, seconds: float | None):
    """Interrupt whatever ``con`` (a Run or a DuckDB connection) runs after ``seconds`` (None or 0: no
    limit); the interrupted query raises a QueryError that says so."""
    fired, done = threading.Event(), threading.Event()

    def stop():  # again every half second: an interrupt that falls between two queries is lost
        if done.wait(seconds):
            return
        fired.set()
        while not done.is_set():
            con.interrupt()
            done.wait(0.5)

    timer = threading.Thread(target=stop, daemon=True) if seconds else None
    if timer:
        timer.start()
    try:
        yield
    except (duckdb.InterruptException, QueryError) as exc:
        if fired.is_set():
            raise QueryTimeout(timeout_message(seconds)) from None
        if isinstance(exc, QueryError):
            raise
        raise QueryError("the query was interrupted") from None
    finally:
        done.set()


def timeout_message(seconds: float) -> str:
    return (f"the query was stopped after {seconds:g} s (--timeout); narrow it (WHERE, LIMIT) or give it longer "
            "with --timeout SECONDS (0: no limit)")


@contextlib.contextmanager
def process_limits(memory_mb: int | None, seconds: float | None):
    """For a query run by a process of its own (the ``tracekit sql`` command), the limits DuckDB's settings
    do not reach: the address space is capped at what the process maps now, plus ``memory_mb``, plus
    HEADROOM_MB (an allocation past it fails and DuckDB reports out of memory: ``repeat('x', 10^9)`` is
    allocated outside DuckDB's memory limit); and a query still running GRACE_S after its time limit's
    interrupt ends the process with the time limit's message and exit code (one call of a string function
    does not see an interrupt). Linux only for the cap; never for a library caller's process."""
    old = None
    if memory_mb and _address_space() is not None:
        import resource

        old = resource.getrlimit(resource.RLIMIT_AS)
        cap = _address_space() + (int(memory_mb) + HEADROOM_MB) * 2**20
        if old[1] == resource.RLIM_INFINITY or cap < old[1]:
            resource.setrlimit(resource.RLIMIT_AS, (cap, old[1]))
        else:
            old = None
    done = threading.Event()

    def watch():
        if done.wait(seconds + GRACE_S):
            return
        import sys

        sys.stderr.write(f"error: {timeout_message(seconds)}\n")
        sys.stderr.flush()
        os._exit(QueryTimeout.exit_code)

    if seconds:
        threading.Thread(target=watch, daemon=True, name="tracekit-sql-watchdog").start()
    try:
        yield
    finally:
        done.set()
        if old is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, old)


def _address_space() -> int | None:
    """Bytes of address space this process maps now (VmSize), or None where /proc does not say."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _literal(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"
