"""The HTML pieces of a run's report: a report's table (its first columns and rows, the rest one click
away), a note, the run's identity; and a run in Jupyter (Run._repr_html_). The page itself, with its
charts and advice, is commands/html.py."""

from __future__ import annotations

import html

import pyarrow as pa

from .render import to_html
from .reports import get
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


def why(sentence: str) -> str:
    return f'<p class="why">{html.escape(sentence)}</p>'


def table(t: pa.Table, first: list[str] | None = None, max_rows: int = MAX_ROWS) -> str:
    """The table with its ``first`` columns and first ``max_rows`` rows; when that leaves anything out,
    the whole table follows in a <details> (one click away)."""
    cols = [c for c in (first or t.column_names) if c in t.column_names]
    shown = t.select(cols).slice(0, max_rows)
    out = f'<div class="scroll">{to_html(shown)}</div>'
    left = []
    if t.num_rows > max_rows:
        left.append(plural(t.num_rows - max_rows, "more row", "more rows"))
    if len(cols) < t.num_columns:
        hidden = [c for c in t.column_names if c not in cols]
        left.append(f"{plural(len(hidden), 'more column', 'more columns')} ({', '.join(hidden)})")
    if left:
        out += (f"<details><summary>The whole table: {' and '.join(left)}</summary>"
                f'<div class="scroll">{to_html(t)}</div></details>')
    return out


def report_html(run, name: str, first_key: str | None = None, **params) -> tuple[pa.Table, str]:
    t = get(name).run(run, **params)
    note = note_of(t)
    body = table(t, FIRST.get(first_key or name) or list(get(name).first) or None) if t.num_rows else ""
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
