"""Documentation of every table and view a run exposes: name, column, type, meaning (with unit)."""

from __future__ import annotations

import pyarrow as pa

from .. import sql_files as _sql
from ..rules import VIEWS
from ..run_tables import EVENT_COLUMNS, PG_COLUMNS, TRACE_COLUMNS
from ..table_meta import FIRST_KEY, WRAP_KEY

# The tables a run stores as written at ingest: name -> (columns doc, what a row is). The views after them
# are documented in their .sql headers.
TABLES = {
    "events": (EVENT_COLUMNS,
               "every event of every trace, one row each, nothing dropped (plus rank from the partition)"),
    "traces": (TRACE_COLUMNS, "one row per ingested trace file"),
    "process_groups": (PG_COLUMNS, "process groups from distributedInfo.pg_config, one row per (rank, group)"),
}


def documented_objects() -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(name, description, [(column, meaning)]) for every table and view."""
    out = []
    for name, (cols, doc) in TABLES.items():
        extra = [("rank", "global rank of the trace (from the Parquet partition)")] if name == "events" else []
        out.append((name, doc, extra + [(c, m) for c, _t, m in cols]))
    for name in VIEWS:
        if name == "clock_offsets":  # computed in Python (tracekit.clocks), stored as a fact
            from ..clocks import OFFSET_COLUMNS, TABLE_DOC
            out.append((name, TABLE_DOC, [(c, m) for c, _t, m in OFFSET_COLUMNS]))
            continue
        f = _sql.rule(name)
        out.append((name, f.doc, f.columns))
    return out


def schema_table(run, name: str | None = None) -> pa.Table:
    """Every table and view with each column's type and meaning; with ``name``, that table or view only
    (or that report's columns). An unknown name is an error that suggests the nearest."""
    objects = documented_objects()
    if name is not None:
        chosen = [o for o in objects if o[0] == name]
        if not chosen:
            return _report_schema(name, [o[0] for o in objects])
        objects = chosen
    rows = []
    for obj, _doc, cols in objects:
        types = dict(run.con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {obj})").fetchall())
        for col, meaning in cols:
            rows.append({"object": obj, "column": col, "type": types.get(col, "?"), "meaning": meaning})
    return _meaning_first(pa.Table.from_pylist(rows))


def _meaning_first(table: pa.Table) -> pa.Table:
    """In a narrow terminal the type is left out before the meaning (the column's unit is in it)."""
    return table.replace_schema_metadata({FIRST_KEY: b"object,column,meaning", WRAP_KEY: b"meaning"})


def _report_schema(name: str, objects: list[str]) -> pa.Table:
    from ..errors import UsageError
    from ..query_errors import describe
    from ..reports import REGISTRY

    if name in REGISTRY:
        cols = _sql.load("reports", name).columns
        return _meaning_first(pa.Table.from_pylist([{"object": f"report {name}", "column": c, "type": "", "meaning": m}
                                                     for c, m in cols]))
    hint = describe(f"Catalog Error: Table with name {name} does not exist!",
                    list(dict.fromkeys(objects + list(REGISTRY))))
    raise UsageError(f"schema: {hint.replace(' (`tracekit schema RUN` lists every column)', '')}")
