"""Documentation of every table and view a run exposes: name, column, type, meaning (with unit)."""

from __future__ import annotations

import pyarrow as pa

from . import sql as _sql
from .store import TABLES, VIEWS


def documented_objects() -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(name, description, [(column, meaning)]) for every table and view."""
    out = []
    for name, (_pattern, cols, doc) in TABLES.items():
        extra = [("rank", "global rank of the trace (from the Parquet partition)")] if name == "events" else []
        out.append((name, doc, extra + [(c, m) for c, _t, m in cols]))
    for name in VIEWS:
        f = _sql.load("views", name)
        out.append((name, f.doc, f.columns))
    return out


def schema_table(run) -> pa.Table:
    rows = []
    for name, _doc, cols in documented_objects():
        types = dict(run.con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {name})").fetchall())
        for col, meaning in cols:
            rows.append({"object": name, "column": col, "type": types.get(col, "?"), "meaning": meaning})
    return pa.Table.from_pylist(rows)
