"""The one exception family tracekit raises; the CLI turns each into a message and an exit code."""


class TracekitError(Exception):
    """A problem the user can act on. The message names the file, the place and what to do."""

    exit_code = 1


class TraceFormatError(TracekitError):
    """An input file is not a readable Kineto/Chrome trace (bad gzip, bad JSON, wrong types)."""

    exit_code = 2


class RankError(TracekitError):
    """The rank of a trace cannot be told, or two traces claim the same rank."""

    exit_code = 3


class RunError(TracekitError):
    """A run directory is missing, incomplete or of an unknown schema version."""

    exit_code = 4


class QueryError(TracekitError):
    """A SQL query or a report failed; the message carries DuckDB's own words."""

    exit_code = 5
