"""advise and doctor in the terminal: one block per finding (its rank and what, then the saving, where, the
evidence, the change, how sure, the SQL behind it), wrapped to the width it is given (the terminal's,
$COLUMNS, or 80 in a pipe; 100 into a file). A table of nine columns with sentences in them cannot be read
in 80 columns; csv, json, markdown and parquet keep the columns (render.emit)."""

from __future__ import annotations

import re

import pyarrow as pa

from . import _cell, safe_text

# the order of the lines under a finding's heading; a column not named here follows them, in its order
ORDER = ("where", "evidence", "change", "confidence", "sql")


def _saving(row: dict) -> str | None:
    """'8.927 ms per step (55.767 % of the step)', or None when the finding has no saving (hygiene)."""
    if row.get("saving_ms") is None:
        return None
    pct = row.get("saving_pct")
    return f"{_cell(row['saving_ms'])} ms per step" + (f" ({_cell(pct)} % of the step)" if pct is not None else "")


# doctor's findings: the heading is severity and check, then these lines
DOCTOR_ORDER = ("ranks", "finding", "fix")


def rank_ranges(text: str) -> str:
    """A comma-separated list of ranks written with ranges, as exact and shorter: "0,1,2,3,5,7,8" ->
    "0-3,5,7-8". Text that is not such a list comes back as it is."""
    parts = text.split(",")
    if len(parts) < 3 or not all(p.strip().isdigit() for p in parts):
        return text
    ranks = sorted({int(p) for p in parts})
    out, lo = [], ranks[0]
    for prev, r in zip(ranks, ranks[1:] + [None], strict=True):
        if r is None or r != prev + 1:
            out.append(str(lo) if lo == prev else f"{lo}-{prev}")
            lo = r
    return ",".join(out)


_RANK_LIST = re.compile(r"\b(ranks )(\d+(?:,\d+){2,})\b")


def _ranges_in(text: str) -> str:
    """``text`` with each list of ranks after the word "ranks" written with ranges (advise's "ranks
    1,2,3,...,63" as doctor writes it: "ranks 1-63"); a number with thousands separators is no such list."""
    return _RANK_LIST.sub(lambda m: m.group(1) + rank_ranges(m.group(2)), text)


def doctor_heading(i: int, row: dict) -> str:
    return f"{row.get('severity') or ''}: {row.get('check') or ''}"


def _advise_heading(i: int, row: dict) -> str:
    return f"{row.get('priority', i)}. {row.get('finding') or ''}"


def print_findings(table: pa.Table, title: str | None = None, console=None, heading=_advise_heading,
                   order: tuple[str, ...] = ORDER) -> None:
    """Each finding of ``table`` as a block: ``heading(i, row)`` in bold, then the columns of ``order``
    (advise's by default; doctor passes DOCTOR_ORDER and doctor_heading)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # the width it is given, as the tables take it: the terminal's, else $COLUMNS, else 80 (a pipe, a log)
    console = console or Console()
    rows = table.to_pylist()
    if title:
        console.print(Text(safe_text(title), style="bold"))
    if not rows:
        console.print("no finding", highlight=False, markup=False)
        return
    shown = ("priority", "finding", "saving_ms", "saving_pct") if heading is _advise_heading else ("severity", "check")
    rest = [c for c in table.column_names if c not in order and c not in shown]
    for i, row in enumerate(rows, 1):
        console.print()
        console.print(Text(safe_text(heading(i, row)), style="bold"))
        lines = [("saving", _saving(row))]
        lines += [(c, None if row.get(c) is None else _cell(row[c])) for c in order + tuple(rest) if c in row]
        lines = [(c, rank_ranges(v) if c == "ranks" and v else _ranges_in(v) if v else v) for c, v in lines]
        if row.get("sql"):
            lines.append(("", f"(--sql {row.get('priority', i)} prints it)"))
        grid = Table.grid(padding=(0, 2))
        grid.add_column(no_wrap=True, style="dim")
        grid.add_column(overflow="fold")
        for label, value in lines:
            if value is not None and value != "":
                grid.add_row(Text("   " + label), Text(safe_text(value)))
        console.print(grid)
