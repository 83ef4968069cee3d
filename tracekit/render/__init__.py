"""Formatting only: a pyarrow.Table -> rich table | csv | json | markdown | parquet. No computation."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from decimal import Decimal

import pyarrow as pa

from ..table_meta import first_of, key_of, note_of, wrap_of
from ..words import plural

FORMATS = ("table", "csv", "json", "markdown", "parquet")
# a text column of a table in the terminal is at most this wide (longer text wraps): a kernel's name of 200
# characters would push the numbers after it off the screen, or to its far right in a pipe
TEXT_MAX = 80


# characters a terminal acts on rather than shows: C0 controls but tab and newline, DEL, C1 controls (ESC
# sequences recolour, move the cursor, retitle the window), and the bidi overrides that reorder a line
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def safe_text(s: str) -> str:
    """``s`` with the characters a terminal would act on written as escapes (ESC -> \\x1b): a string from
    a trace is shown, never obeyed."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode(), s)


def one_line(message: str) -> str:
    """A message as one line that a terminal shows and never obeys: the names in it come from the file
    system and from traces (escape codes, newlines), written as escapes, as table cells are."""
    return safe_text(message).replace("\n", "\\n").replace("\t", "\\t")


def is_number(field: pa.Field) -> bool:
    """A column of numbers (integers, floats, decimals): right-aligned, formatted as numbers."""
    return pa.types.is_integer(field.type) or pa.types.is_floating(field.type) or pa.types.is_decimal(field.type)


def _cell(v) -> str:
    """One number style in tables: integers (and integral decimals: DuckDB's HUGEINT sums) with thousands
    separators, other numbers to 3 decimals with separators; csv, json and parquet keep exact values."""
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        return f"{v:,.3f}" if abs(v) < 1e15 else f"{v:.6g}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    if isinstance(v, Decimal):
        return f"{int(v):,}" if v == v.to_integral_value() else f"{float(v):,.3f}"
    return str(v)


# columns that name a thing by its number, not a quantity: no thousands separators (step 1009, not 1,009, as
# advise and the traces write it)
ID_COLUMNS = frozenset({"rank", "step", "iteration", "last_rank", "first_rank", "src_rank", "dst_rank", "pid",
                        "tid", "stream", "device", "seq", "correlation", "event_index"})


def _cells(table: pa.Table) -> list[list[str]]:
    """Each row's cells as text (_cell), except that a microseconds column (``*_us``: the traces' own
    resolution) whose every value is a whole number prints as integers (41,730, not 41,730.000), and an
    identifier's integers (ID_COLUMNS) print as they are."""
    whole_us = {f.name for f in table.schema if f.name.endswith("_us") and pa.types.is_floating(f.type)
                and all(v is None or (math.isfinite(v) and v == int(v)) for v in table.column(f.name).to_pylist())}
    columns = table.column_names
    ids = id_columns(table.schema)
    return [[str(row[c]) if c in ids and row[c] is not None else
             _cell(int(row[c]) if c in whole_us and row[c] is not None else row[c]) for c in columns]
            for row in table.to_pylist()]


def id_columns(schema: pa.Schema) -> set[str]:
    """The integer columns of ``schema`` that name a thing (ID_COLUMNS): printed as they are, no separators."""
    return {f.name for f in schema if f.name in ID_COLUMNS and pa.types.is_integer(f.type)}


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
    for row in _cells(table):
        lines.append("| " + " | ".join(v.replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines) + "\n"


def to_html(table: pa.Table) -> str:
    """An HTML <table> of the rows (numbers formatted as in the terminal), escaped."""
    import html

    numeric = {f.name for f in table.schema if is_number(f)}
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.column_names)
    body = "".join("<tr>" + "".join(f'<td class="{"n" if c in numeric else "t"}">{html.escape(v)}</td>'
                                    for c, v in zip(table.column_names, r, strict=True)) + "</tr>"
                   for r in _cells(table))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"



def _header_lines(name: str, width: int) -> str:
    """A column name wrapped after its underscores into lines of at most ``width`` (a part longer than
    that stays whole)."""
    parts = [p + "_" for p in name.split("_")]
    parts[-1] = parts[-1][:-1]
    lines = [""]
    for part in parts:
        if lines[-1] and len(lines[-1]) + len(part) > width:
            lines.append("")
        lines[-1] += part
    return "\n".join(lines)


def _fit(columns: list[str], rows: list[list[str]], numeric: set, first: list[str], width: int,
         key: list[str] = ()):
    """Columns to show and their widths in ``width`` characters, as a compact table (3 spaces between
    columns): headers wrapped at underscores, text cells cut with an ellipsis, then the least needed
    columns left out (those not among ``first``, rightmost first, then ``first``'s from its last; never the
    first column). A ``key`` column (what tells the rows apart) is never cut nor left out: the others give
    way, and None (one record per block) where they cannot. None when not even one column fits."""
    longest_part = {c: max(len(p) + 1 for p in c.split("_")) for c in columns}
    cell = {c: max([len(r[i]) for r in rows] or [0]) if c in numeric else min(max([len(r[i]) for r in rows] or [0]),
                                                                             TEXT_MAX) for i, c in enumerate(columns)}
    want = {c: max(cell[c], longest_part[c]) for c in columns}
    # short labels (a size bucket, an instance) stay on one line; long text wraps, to 16 at least, and a word
    # longer than that (a path, a dotted name) is folded across lines rather than the column left out
    least = {c: want[c] if c in numeric or c in key or want[c] <= 24 else max(longest_part[c], 16) for c in columns}
    keep = list(columns)
    order = [c for c in reversed(columns[1:]) if c not in first and c not in key] + [
        c for c in reversed(first) if c in columns[1:] and c not in key]  # the last declared goes first
    while True:
        w = {c: want[c] for c in keep}
        over = sum(w.values()) + 3 * (len(keep) - 1) - width
        for c in sorted((c for c in keep if c not in numeric), key=lambda c: -want[c]):  # wrap text first
            if over <= 0:
                break
            cut = min(over, w[c] - min(least[c], w[c]))
            w[c] -= cut
            over -= cut
        if over <= 0:
            return keep, w
        if not order:
            return None
        keep.remove(order.pop(0))


def print_rich(table: pa.Table, title: str | None = None, console=None) -> None:
    """A table in the terminal. What fits at its natural width is drawn in a box; a wider table is drawn
    compact with wrapped headers and the least needed columns left out (said under it), so that it stays
    a table in the width it is given (the terminal's, $COLUMNS, or 80 in a pipe); a text cell longer than
    its column is cut with an ellipsis (csv and json keep it whole); only what cannot fit even so becomes
    one record per block."""
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    numeric = {f.name for f in table.schema if is_number(f)}
    wrap = set(wrap_of(table))
    columns = table.column_names
    rows = [[safe_text(v) for v in r] for r in _cells(table)]
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(columns)]
    widths = [w if c in numeric else min(w, max(TEXT_MAX, len(c))) for w, c in zip(widths, columns, strict=True)]
    natural = sum(widths) + 3 * len(widths) + 1
    # the width it is given: the terminal's, else $COLUMNS, else 80 (a pipe, a log; rich's own rule)
    console = console or Console()
    if not rows or natural <= console.width:
        # every string is a Text: rich never reads a trace's "[bold]" or "[/x]" as markup
        t = Table(title=Text(safe_text(title)) if title else None, show_lines=False)
        for c, w in zip(columns, widths, strict=True):  # a number never broken; text past its column cut
            # with an ellipsis (whole in csv and json), or wrapped where the table says it is read whole
            t.add_column(Text(safe_text(c)), justify="right" if c in numeric else "left",
                         no_wrap=c not in wrap, overflow="fold" if c in wrap else "ellipsis",
                         max_width=None if c in numeric else w)
        for r in rows:
            t.add_row(*(Text(v) for v in r))
        console.print(t)
        return
    fitted = _fit(columns, rows, numeric, first_of(table), console.width, key_of(table))
    if fitted is None:
        _print_vertical(columns, rows, numeric, title, console)
        return
    keep, w = fitted
    t = Table(title=Text(safe_text(title)) if title else None, box=box.SIMPLE_HEAD, show_edge=False,
              pad_edge=False, padding=(0, 1))
    for c in keep:
        t.add_column(Text(safe_text(_header_lines(c, w[c]))), justify="right" if c in numeric else "left",
                     width=w[c], no_wrap=c not in wrap, overflow="fold" if c in wrap else "ellipsis")
    index = [columns.index(c) for c in keep]
    for r in rows:
        t.add_row(*(Text(r[i]) for i in index))
    console.print(t)
    left = [c for c in columns if c not in keep]
    if left:
        console.print(f"({plural(len(left), 'column', 'columns')} left out to fit {console.width} "
                      f"characters: {safe_text(', '.join(left))}; --columns picks columns, --format csv shows all)",
                      highlight=False, markup=False)


def _print_vertical(columns, rows, numeric, title, console) -> None:
    """A table too wide for the terminal, one record per block (as psql's \\x): no number is broken."""
    from rich.table import Table
    from rich.text import Text

    if title:
        console.print(Text(safe_text(title), style="italic"))
    name_w = max(len(c) for c in columns)
    for i, r in enumerate(rows):
        t = Table(show_header=False, box=None, padding=(0, 1), title=Text(f"-[ row {i + 1} ]-"),
                  title_justify="left")
        t.add_column(width=name_w, no_wrap=True, style="bold")
        t.add_column(overflow="fold")
        for c, v in zip(columns, r, strict=True):
            t.add_row(Text(safe_text(c)), Text(v))
        console.print(t)


def pick_columns(table: pa.Table, columns: list[str] | None) -> pa.Table:
    """``table`` with only ``columns``, in that order; a name it does not have is an error listing those
    it has."""
    if not columns:
        return table
    unknown = [c for c in columns if c not in table.column_names]
    if unknown:
        from ..errors import UsageError
        raise UsageError(f"--columns: no column {', '.join(unknown)} here; the columns are: "
                         f"{', '.join(table.column_names)}")
    return table.select(columns).replace_schema_metadata(table.schema.metadata)


def _fill(text: str) -> str:
    """A note wrapped at spaces to the terminal's width (a 420-character line was broken mid-word by it);
    a pipe or a log gets it on one line, for grep."""
    import shutil
    import textwrap

    width = shutil.get_terminal_size((80, 24)).columns
    return textwrap.fill(text, width=max(40, width), break_long_words=False, break_on_hyphens=False)


def emit(table: pa.Table, fmt: str, out: str | None = None, title: str | None = None,
         columns: list[str] | None = None) -> None:
    """Write ``table`` in ``fmt`` to the file ``out`` or to stdout, with only ``columns`` when given; a
    report's note (what it left out) goes to stderr, so that the data on stdout stays machine-readable."""
    table = pick_columns(table, columns)
    note = note_of(table)
    if note:  # (it may quote names from the traces: shown, never obeyed, as in the table)
        import sys
        print(_fill(safe_text(note)) if sys.stderr.isatty() else safe_text(note), file=sys.stderr)
    if fmt == "parquet":
        import sys

        import pyarrow.parquet as pq

        if out is None:
            from ..errors import TracekitError
            if sys.stdout.isatty():
                raise TracekitError("--format parquet needs -o FILE (it is binary)")
            pq.write_table(table, sys.stdout.buffer)
            return
        from .target import target
        with target(out, binary=True) as f:
            pq.write_table(table, f)
        return
    if fmt == "table":
        if table.num_rows == 0 and note:
            return  # the note (on stderr) says why; an empty grid says nothing
        if out is not None:
            from rich.console import Console

            from .target import target
            with target(out, binary=False) as f:
                print_rich(table, title, Console(file=f, width=200))
            return
        print_rich(table, title)
        return
    text = {"csv": to_csv, "json": to_json, "markdown": to_markdown}[fmt](table)
    if out is None:
        import sys
        sys.stdout.write(safe_text(text) if sys.stdout.isatty() else text)
    else:
        from .target import target
        with target(out, binary=False) as f:
            f.write(text)
