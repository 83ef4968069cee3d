"""Interrupts during a write (Ctrl-C, SIGTERM): a step that signals wait for, and DuckDB's own word for one.

An interrupt may land anywhere in an ingest; what must not be split is the switch of the new version and
the writer's note that it happened, or the writer would remove the version the run now names and say
that nothing was written (issue 29, item 4). Python runs signal handlers in the main thread between
bytecodes, so a handler that only records the signal defers it whatever other threads run.
"""

from __future__ import annotations

import contextlib
import signal
import threading

from ..errors import Interrupted  # noqa: F401 - (raised by the writers, with what the run holds)

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def deferred():
    """SIGINT and SIGTERM that arrive during the block are raised (as KeyboardInterrupt) when it ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    old = {}
    for s in _SIGNALS:
        h = signal.getsignal(s)
        if h is not None:
            old[s] = signal.signal(s, lambda signum, frame: got.append(signum))
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if got:
            raise KeyboardInterrupt


_switched: list[str] = []  # the runs this process has switched a new version into


def note_switched(out: str) -> None:
    """Run ``out`` now holds a new version: an interrupt from here on must not say that nothing was written."""
    _switched.append(out)


_WRITERS = ("ingest",)  # the commands that write a run (the others write a run only to fill the cache: a
# fill cut short says so itself, errors.Interrupted)
_OWN_WORDS = {"cache": "interrupted: tracekit cache stopped before it finished; a cached run it was removing may be "
                       "left in part, every other run is as it was"}


def message(command: str | None = None) -> str:
    """What an interrupt that reached the command line (outside a writer's own handling) says, for the
    subcommand ``command`` (None: not known)."""
    if _switched:
        return f"interrupted after the new run was complete and in place: {_switched[-1]} holds it"
    if command is None or command in _WRITERS:
        return "interrupted: nothing was written (an earlier run, if any, is intact)"
    return _OWN_WORDS.get(command, f"interrupted: tracekit {command} stopped before it finished; it changed no "
                                   "run, and an output file (-o) is as it was")


def is_interrupt(exc: BaseException) -> bool:
    """``exc`` is DuckDB's (or Arrow's) report of a query stopped by Ctrl-C (the signal it swallowed), or an
    error raised while an interrupt was being handled (DuckDB's "connection is busy" from a cleanup that
    met the interrupted query): either way, the user's interrupt."""
    import duckdb

    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, (KeyboardInterrupt, duckdb.InterruptException)):
            return True
        text = str(exc)
        if any(w in text for w in ("Query interrupted", "INTERRUPT Error", "KeyboardInterrupt")):
            return True  # (the last: DuckDB's words for a Python object it read that Ctrl-C cut short)
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def raise_on_sigterm() -> None:
    """At the start of a command: SIGTERM in this process raises KeyboardInterrupt, as Ctrl-C does (the
    writer cleans up and says what the run holds); a child forked from it (a pool worker) still dies of it
    at once."""
    import os

    _switched.clear()  # (a new command: tests call the CLI's main many times in one process)
    main_pid = os.getpid()

    def on_term(signum, frame):
        if os.getpid() != main_pid:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_term)
