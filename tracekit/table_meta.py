"""What a result table carries beside its rows, in its Arrow schema metadata: a note (what a report left
out and why, printed on stderr) and the columns a reader needs first (kept when the terminal is narrow).
Reports write them, render reads them: this module sits below both."""

from __future__ import annotations

NOTE_KEY = b"tracekit.note"
FIRST_KEY = b"tracekit.first"  # the columns a reader needs first (kept when space is short)
WRAP_KEY = b"tracekit.wrap"  # text columns a terminal table wraps whole (others: cut with an ellipsis)
KEY_KEY = b"tracekit.key"  # the columns that tell rows apart (whatif --sweep's plan): never cut nor left out


def note_of(table) -> str | None:
    """The note a report attached to its table (what it left out and why), or None."""
    meta = table.schema.metadata or {}
    return meta[NOTE_KEY].decode() if NOTE_KEY in meta else None


def _columns_of(table, key: bytes) -> list[str]:
    """The comma-separated column names a table's metadata holds under ``key``, or []."""
    meta = table.schema.metadata or {}
    return meta[key].decode().split(",") if key in meta else []


def first_of(table) -> list[str]:
    """The columns a report declared first, or []."""
    return _columns_of(table, FIRST_KEY)


def key_of(table) -> list[str]:
    """The columns that tell a table's rows apart, which a terminal table shows whole, or []."""
    return _columns_of(table, KEY_KEY)


def wrap_of(table) -> list[str]:
    """The text columns a table declared to be read whole in a terminal table (a schema's meaning, a path
    to copy): wrapped there, where any other text longer than its column is cut with an ellipsis."""
    return _columns_of(table, WRAP_KEY)
