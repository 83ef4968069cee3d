"""Formatting only: a pyarrow.Table -> rich table | csv | json | markdown | parquet. No computation."""

from __future__ import annotations

import csv
import io
import json
import math
from decimal import Decimal

import pyarrow as pa

FORMATS = ("table", "csv", "json", "markdown", "parquet")


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        return f"{v:,.3f}" if abs(v) < 1e15 else f"{v:.6g}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


def _jsonable(v):
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    if isinstance(v, (bytes, bytearray)):
        return v.decode("utf-8", "replace")
    if hasattr(v, "isoformat"):
        return v.isoformat()
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    if isinstance(v, Decimal):
        return str(v)
    return v


def to_csv(table: pa.Table) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(table.column_names)
    for row in table.to_pylist():
        w.writerow(["" if row[c] is None else row[c] for c in table.column_names])
    return buf.getvalue()


def to_json(table: pa.Table) -> str:
    """A JSON list of row objects with the table's column names as keys."""
    return json.dumps([_jsonable(r) for r in table.to_pylist()], indent=1) + "\n"


def to_markdown(table: pa.Table) -> str:
    cols = table.column_names
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in table.to_pylist():
        lines.append("| " + " | ".join(_cell(row[c]).replace("|", "\\|") for c in cols) + " |")
    return "\n".join(lines) + "\n"


def to_html(table: pa.Table) -> str:
    """An HTML <table> of the rows (numbers formatted as in the terminal), escaped."""
    import html

    numeric = {f.name for f in table.schema if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)
               or pa.types.is_decimal(f.type)}
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.column_names)
    body = "".join("<tr>" + "".join(f'<td class="{"n" if c in numeric else "t"}">{html.escape(_cell(r[c]))}</td>'
                                    for c in table.column_names) + "</tr>" for r in table.to_pylist())
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def print_rich(table: pa.Table, title: str | None = None, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    import sys

    numeric = {f.name for f in table.schema if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)
               or pa.types.is_decimal(f.type)}
    rows = [[_cell(row[c]) for c in table.column_names] for row in table.to_pylist()]
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(table.column_names)]
    # a pipe or a log gets the whole table at its natural width; a terminal, what fits its width
    console = console or (Console() if sys.stdout.isatty() else Console(width=max(80, sum(widths) + 3 * len(widths) + 1)))
    if rows and sum(widths) + 3 * len(widths) + 1 > console.width:
        _print_vertical(table.column_names, rows, numeric, title, console)
        return
    t = Table(title=title, show_lines=False)
    for c in table.column_names:  # a number is never broken across lines
        t.add_column(c, justify="right" if c in numeric else "left",
                     no_wrap=c in numeric, overflow="ellipsis" if c in numeric else "fold")
    for r in rows:
        t.add_row(*r)
    console.print(t)


def _print_vertical(columns, rows, numeric, title, console) -> None:
    """A table too wide for the terminal, one record per block (as psql's \\x): no number is broken."""
    from rich.table import Table

    if title:
        console.print(title, style="italic")
    name_w = max(len(c) for c in columns)
    for i, r in enumerate(rows):
        t = Table(show_header=False, box=None, padding=(0, 1), title=f"-[ row {i + 1} ]-", title_justify="left")
        t.add_column(width=name_w, no_wrap=True, style="bold")
        t.add_column(overflow="fold")
        for c, v in zip(columns, r):
            t.add_row(c, v)
        console.print(t)


def emit(table: pa.Table, fmt: str, out: str | None = None, title: str | None = None) -> None:
    """Write ``table`` in ``fmt`` to the file ``out`` or to stdout; a report's note (what it left out)
    goes to stderr, so that the data on stdout stays machine-readable."""
    from ..reports.base import note_of

    note = note_of(table)
    if note:
        import sys
        print(note, file=sys.stderr)
    if fmt == "parquet":
        import pyarrow.parquet as pq
        import sys

        if out is None:
            from ..errors import TracekitError
            if sys.stdout.isatty():
                raise TracekitError("--format parquet needs -o FILE (it is binary)")
            pq.write_table(table, sys.stdout.buffer)
            return
        pq.write_table(table, out)
        return
    if fmt == "table":
        if table.num_rows == 0 and note:
            return  # the note (on stderr) says why; an empty grid says nothing
        if out is not None:
            from rich.console import Console
            with open(out, "w") as f:
                print_rich(table, title, Console(file=f, width=200))
            return
        print_rich(table, title)
        return
    text = {"csv": to_csv, "json": to_json, "markdown": to_markdown}[fmt](table)
    if out is None:
        import sys
        sys.stdout.write(text)
    else:
        with open(out, "w") as f:
            f.write(text)
