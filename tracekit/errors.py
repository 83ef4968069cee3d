"""The one exception family tracekit raises; the CLI turns each into a message and an exit code."""


class TracekitError(Exception):
    """A problem the user can act on. The message names the file, the place and what to do."""

    exit_code = 1


class TraceFormatError(TracekitError):
    """An input file is not a readable Kineto/Chrome trace (bad gzip, bad JSON, wrong types)."""

    exit_code = 2


class UsageError(TracekitError):
    """A command or call that names what does not exist: a report, a report's parameter or value, a column
    or a table, one table where the output takes one (the same code as click's for a command line it
    refuses)."""

    exit_code = 2


class RankError(TracekitError):
    """The rank of a trace cannot be told, or two traces claim the same rank."""

    exit_code = 3


class RunError(TracekitError):
    """A run directory is missing, incomplete or of an unknown schema version."""

    exit_code = 4


class RunDamaged(RunError):
    """A file of a run cut short or removed by hand since tracekit wrote it (layout/damage.py)."""


class QueryError(TracekitError):
    """A SQL query or a report failed; the message carries DuckDB's own words."""

    exit_code = 5


class QueryTimeout(QueryError):
    """A query stopped by its time limit (``tracekit sql --timeout``)."""


# What a full or read-only disk looks like in the words of DuckDB, Arrow or the OS: never the input's fault.
_DISK_ERRNOS = ("ENOSPC", "EDQUOT", "EROFS", "EFBIG", "EIO")


def disk_error(exc: BaseException) -> OSError | None:
    """``exc`` as an OSError when it says that writing failed for want of space, quota or a writable file
    system (a DuckDB or Arrow error carries the OS's words); else None. An ingest that meets one fails
    whole, naming what filled up: it is never a bad input to skip."""
    import errno
    import os
    import re

    if isinstance(exc, OSError) and exc.errno in {getattr(errno, n) for n in _DISK_ERRNOS}:
        return exc
    text = str(exc)
    m = re.search(r'"errno"\s*:\s*"?(\d+)', text)
    codes = [int(m.group(1))] if m else []
    codes += [getattr(errno, n) for n in _DISK_ERRNOS if os.strerror(getattr(errno, n)) in text]
    code = next((c for c in codes if c in {getattr(errno, n) for n in _DISK_ERRNOS}), None)
    if code is None:
        return None
    path = re.search(r'(?:file|directory)\s+\\?"([^"\\]+)\\?"', text)
    return OSError(code, os.strerror(code), path.group(1) if path else None)


class Interrupted(TracekitError):
    """Ctrl-C or SIGTERM during a write: the message says what the run now holds (printed as it is)."""

    exit_code = 130

    def __init__(self, out: str, switched: bool, earlier: bool = True):
        super().__init__(f"interrupted after the new run was complete and in place: {out} holds it" if switched
                         else f"interrupted: nothing was written; {out} is as it was (an earlier run there is "
                              "intact)" if earlier else f"interrupted: nothing was written; no run was made at {out}")
