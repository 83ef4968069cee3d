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


def is_interrupt(exc: BaseException) -> bool:
    """``exc`` is DuckDB's (or Arrow's) report of a query stopped by Ctrl-C: the signal it swallowed."""
    try:
        import duckdb

        if isinstance(exc, duckdb.InterruptException):
            return True
    except ImportError:  # pragma: no cover
        pass
    text = str(exc)
    return "Query interrupted" in text or "INTERRUPT Error" in text


def raise_on_sigterm() -> None:
    """SIGTERM in this process raises KeyboardInterrupt, as Ctrl-C does (the writer cleans up and says what
    the run holds); a child forked from it (a pool worker) still dies of it at once."""
    import os

    main_pid = os.getpid()

    def on_term(signum, frame):
        if os.getpid() != main_pid:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_term)
