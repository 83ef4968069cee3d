"""A query's result written batch by batch (csv, json, markdown, parquet): memory stays that of one batch,
however many rows the result has. The text is what render's whole-table writers give for the same rows.
A table for the terminal shows its first TABLE_ROWS rows (more is not worth reading there), then counts
the rest, a batch at a time, to say how many rows it left out."""

from __future__ import annotations

import csv
import io
import json
import sys

import pyarrow as pa

from . import _jsonable, pick_columns, print_rich, safe_text
from .target import target

TABLE_ROWS = 10_000


def write_batches(schema: pa.Schema, batches, fmt: str, out: str | None = None,
                  columns: list[str] | None = None) -> int:
    """Write the record batches in ``fmt`` to the file ``out`` (replaced whole once complete: a failed
    query leaves no half file) or stdout, with only ``columns`` when given; returns the rows written."""
    if columns:
        pick_columns(schema.empty_table(), columns)  # an unknown name: the error lists the columns
        schema, batches = pa.schema([schema.field(c) for c in columns]), (b.select(columns) for b in batches)
    if fmt == "table":
        return _table(schema, batches, out)
    if fmt == "parquet" and out is None and sys.stdout.isatty():
        from ..errors import TracekitError
        raise TracekitError("--format parquet needs -o FILE (it is binary)")
    with target(out, binary=fmt == "parquet") as f:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            n = 0
            with pq.ParquetWriter(f, schema) as w:
                for b in batches:
                    w.write_batch(b)
                    n += b.num_rows
            return n
        clean = _clean_for(f)
        return {"csv": _csv, "json": _json, "markdown": _markdown}[fmt](schema, batches, f, clean)


def _clean_for(f):
    """Text for a terminal has its control characters made visible; a file or a pipe gets the data as is."""
    try:
        return safe_text if f.isatty() else (lambda s: s)
    except (AttributeError, ValueError):
        return lambda s: s


def _csv(schema, batches, f, clean) -> int:
    w = csv.writer(f, lineterminator="\n")
    w.writerow([clean(c) for c in schema.names])
    n = 0
    for b in batches:
        n += b.num_rows
        if all(pa.types.is_integer(t) for t in b.schema.types):  # digits only: Arrow writes what csv would
            import pyarrow.csv as pacsv

            buf = io.BytesIO()
            pacsv.write_csv(b, buf, pacsv.WriteOptions(include_header=False))
            f.write(buf.getvalue().decode())
            continue
        cols = [c.to_pylist() for c in b.columns]
        w.writerows([["" if v is None else (clean(v) if isinstance(v, str) else v) for v in row]
                     for row in zip(*cols, strict=True)])
    return n


def _json(schema, batches, f, clean) -> int:
    """The text json.dumps(rows, indent=1) gives, a batch of rows at a time."""
    n = 0
    for b in batches:
        if b.num_rows:
            text = json.dumps(_jsonable(b.to_pylist()), indent=1)
            f.write(("[\n" if n == 0 else ",\n") + text[2:-2])
            n += b.num_rows
    f.write("[]\n" if n == 0 else "\n]\n")
    return n


def _markdown(schema, batches, f, clean) -> int:
    from . import _cell, id_columns

    f.write("| " + " | ".join(clean(c) for c in schema.names) + " |\n|" + "|".join("---" for _ in schema.names) + "|\n")
    ids = id_columns(schema)  # a step or a rank prints as the table does: 1009, not 1,009
    n = 0
    for b in batches:
        for row in b.to_pylist():
            cells = (str(row[c]) if c in ids and row[c] is not None else _cell(row[c]) for c in schema.names)
            f.write("| " + " | ".join(clean(v).replace("|", "\\|") for v in cells) + " |\n")
            n += 1
    return n


def _table(schema, batches, out) -> int:
    held, n, batches = [], 0, iter(batches)
    for b in batches:
        held.append(b.slice(0, TABLE_ROWS - n))
        n += b.num_rows
        if n > TABLE_ROWS:
            break
    table = pa.Table.from_batches(held, schema=schema)
    if out is not None:
        from rich.console import Console

        with target(out, binary=False) as f:
            print_rich(table, None, Console(file=f, width=200))
    else:
        print_rich(table)
    if n > TABLE_ROWS:
        total, stopped = _count_rest(batches, n)
        of = f"more than {total:,} (counting stopped at --timeout)" if stopped else f"{total:,}"
        print(f"({TABLE_ROWS:,} rows shown of {of}; --format csv, json or parquet gives them all)",
              file=sys.stderr)
    return min(n, TABLE_ROWS)


def _count_rest(batches, n: int) -> tuple[int, bool]:
    """The rows of the result, ``n`` of them read so far: the rest is counted, never held (one batch in
    memory at a time); and whether the time limit stopped the counting (then the rows counted so far)."""
    from ..errors import QueryTimeout

    try:
        for b in batches:
            n += b.num_rows
    except QueryTimeout:
        return n, True
    return n, False
