"""The HTML pieces of a run's report: a report's table (its first columns and rows, the rest one click
away), a note, the run's identity; and a run in Jupyter (Run._repr_html_). The page itself, with its
charts and advice, is commands/html.py."""

from __future__ import annotations

import html

import pyarrow as pa

from .render import to_html
from .reports import get, spread
from .table_meta import note_of
from .words import plural

# the columns a table shows first where its report's own choice (Report.first) does not fit the section;
# the rest are one click away
FIRST = {
    "overlap": ["rank", "window_ms", "comm_ms", "compute_ms", "overlap_ms", "exposed_comm_ms", "overlap_pct"],
    "overlap_step": ["rank", "step", "comm_ms", "compute_ms", "exposed_comm_ms", "overlap_pct"],
    "advise": ["priority", "finding", "where", "saving_ms", "saving_pct", "change", "confidence"],
    "validate": ["collective", "group", "predicted_count", "measured_count", "predicted_bytes", "measured_bytes",
                 "bytes_error_pct"],
}
MAX_ROWS = 16
# Above this many ranks a table of one row per rank (or per rank and step) becomes the spread of its numbers
# and its worst rows (per_rank_table): the page's size and the time to draw it stay what they are at 64 ranks.
PER_RANK_ROWS = spread.PER_RANK_ROWS
WORST_ROWS = spread.MOST_ROWS


def why(sentence: str) -> str:
    return f'<p class="why">{html.escape(sentence)}</p>'


def table(t: pa.Table, first: list[str] | None = None, max_rows: int = MAX_ROWS) -> str:
    """The table with its ``first`` columns and first ``max_rows`` rows; what that leaves out follows in a
    <details> (one click away): the whole table where rows were left out, else only the other columns
    beside the first one (the row's key), not the shown columns again."""
    cols = [c for c in (first or t.column_names) if c in t.column_names]
    shown = t.select(cols).slice(0, max_rows)
    out = f'<div class="scroll">{to_html(shown)}</div>'
    hidden = [c for c in t.column_names if c not in cols]
    if t.num_rows > max_rows:
        left = [plural(t.num_rows - max_rows, "more row", "more rows")]
        if hidden:
            left.append(f"{plural(len(hidden), 'more column', 'more columns')} ({', '.join(hidden)})")
        out += (f"<details><summary>The whole table: {' and '.join(left)}</summary>"
                f'<div class="scroll">{to_html(t)}</div></details>')
    elif hidden:
        rest = t.select(cols[:1] + hidden).replace_schema_metadata(t.schema.metadata)
        out += (f"<details><summary>{plural(len(hidden), 'more column', 'more columns')}: "
                f"{', '.join(hidden)}</summary>"
                f'<div class="scroll">{to_html(rest)}</div></details>')
    return out


def per_rank_table(t: pa.Table, first: list[str], ranks: int, command: str, rows_are: str = "ranks",
                   most: str = "exposed_comm_ms") -> str:
    """A report's table of one row per rank (``rows_are``: "ranks", or "rank and step" rows): whole up to
    PER_RANK_ROWS ranks (``ranks``); above, each number's spread over the rows (min, median, 90th
    percentile, max and the row that has the max: reports/spread.py), then the WORST_ROWS rows with
    the most ``most`` (exposed communication), and a sentence naming ``command``, which gives every row."""
    if ranks <= PER_RANK_ROWS or not t.num_rows:
        return table(t, first)
    from .reports.spread import most_rows, rank_spread

    spread_t = rank_spread(t)
    worst = most_rows(t, most, WORST_ROWS)
    what = "exposed communication" if most == "exposed_comm_ms" else most
    head = f"{ranks:,} ranks" if rows_are == "ranks" else f"{ranks:,} ranks, {t.num_rows:,} {rows_are}"
    return (why(f"{head}: each number's spread over the {rows_are} (the median and 90th percentile interpolated "
                f"between the rows' values), then the {worst.num_rows} {rows_are} with the most {what}. "
                f"Every row: `{command}`.")
            + f'<div class="scroll">{to_html(spread_t)}</div>' + table(worst, first, max_rows=WORST_ROWS))


def report_html(run, name: str, first_key: str | None = None, per_rank: tuple[int, str] | None = None,
                **params) -> tuple[pa.Table, str]:
    """A report's table and its note; ``per_rank`` (the run's ranks, and the command that gives every row):
    a table of one row per rank, shown as per_rank_table shows it."""
    t = get(name).run(run, **params)
    note = note_of(t)
    first = FIRST.get(first_key or name) or list(get(name).first) or t.column_names
    if not t.num_rows:
        body = ""
    elif per_rank:
        by_step = get(name).bind(**params).get("by") == "step"
        body = per_rank_table(t, first, *per_rank, rows_are="rank and step rows" if by_step else "ranks",
                              most=get(name).most or "exposed_comm_ms")
    else:
        body = table(t, first)
    return t, body + (why(note) if note else "")


def identity_table(run) -> str:
    rows = get("identity").run(run).to_pylist()
    body = "".join(f"<tr><td>{html.escape(r['item'])}</td><td>{html.escape(r['value'] or '')}</td></tr>" for r in rows)
    return f'<table class="identity">{body}</table>'


def notebook_html(run) -> str:
    """A run in Jupyter (Run._repr_html_): its identity, the summary and the doctor's findings."""
    _, summary = report_html(run, "summary")
    _, doctor = report_html(run, "doctor")
    return (f"<div><b>tracekit run {html.escape(run.name)}</b>{identity_table(run)}"
            f"<b>summary</b>{summary}<b>doctor</b>{doctor}</div>")
