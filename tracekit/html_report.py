"""`tracekit html RUN -o report.html`: one self-contained page (no network: plots are embedded PNGs)
with what summary, collectives, overlap, exposed --by group, skew and, when the run carries a training
config, validate say, and the plots. Where a section has nothing to show, the page says why."""

from __future__ import annotations

import base64
import datetime as _dt
import html
import os
import tempfile

from . import plot
from .errors import TracekitError
from .render import to_html
from .reports import get
from .reports.base import note_of

STYLE = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}h1{font-size:1.5em}h2{font-size:1.15em;
margin-top:2em;border-bottom:1px solid #ccc}table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
th,td{border:1px solid #ddd;padding:.2em .5em}td.n{text-align:right;font-variant-numeric:tabular-nums}
th{background:#f4f4f4}img{max-width:100%;border:1px solid #eee}p.why{color:#666;font-style:italic}
table{display:block;overflow-x:auto;max-width:100%}"""
# says on the browser's console if an embedded plot failed to decode (the tests read the console)
CHECK = """<script>window.addEventListener("load",()=>{for(const i of document.images){if(!i.complete||
i.naturalWidth===0){console.error("plot failed to load: "+i.alt)}}})</script>"""


def _img(make, tmp: str, name: str) -> str:
    path = os.path.join(tmp, name + ".png")
    try:
        make(path)
    except TracekitError as exc:
        return f'<p class="why">No plot: {html.escape(str(exc))}</p>'
    with open(path, "rb") as f:
        data = base64.b64encode(f.read()).decode()
    return f'<img alt="{html.escape(name)}" src="data:image/png;base64,{data}">'


def _table(run, name: str, **params) -> str:
    t = get(name).run(run, **params)
    note = note_of(t)
    out = to_html(t) if t.num_rows else ""
    return out + (f'<p class="why">{html.escape(note)}</p>' if note else "")


def write_html(run, out: str) -> str:
    from .validate import validate

    parts = [f"<h1>tracekit report</h1><p>{html.escape(run.name)} — {len(run.ranks)} ranks — "
             f"{_dt.datetime.now().isoformat(timespec='seconds')}</p>"]
    with tempfile.TemporaryDirectory() as tmp:
        sections = [
            ("Summary", _table(run, "summary")),
            ("Collectives by message size", _table(run, "collectives")
             + _img(lambda p: plot.message_sizes({"": run}, p), tmp, "message_sizes")),
            ("Overlap per rank", _table(run, "overlap") + _img(lambda p: plot.overlap(run, p), tmp, "overlap")),
            ("Overlap and exposed communication per step", _table(run, "overlap", by="step")
             + _img(lambda p: plot.overlap_by_step(run, p), tmp, "overlap_by_step")),
            ("Exposed communication by process group", _table(run, "exposed", by="group")),
            ("Skew across ranks", _table(run, "skew", limit=20) + _img(lambda p: plot.skew_heatmap(run, p), tmp, "skew")),
        ]
        try:
            rows = validate(run)
            sections.append(("Measured against the model (validate)", to_html(rows) + _img(
                lambda p: plot.measured_vs_predicted(rows.to_pylist(), p), tmp, "measured_vs_predicted")))
        except TracekitError as exc:
            sections.append(("Measured against the model (validate)", f'<p class="why">{html.escape(str(exc))}</p>'))
        for title, body in sections:
            parts.append(f"<h2>{html.escape(title)}</h2>{body}")
    page = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>tracekit report</title>'
            f"<style>{STYLE}</style></head><body>{''.join(parts)}{CHECK}</body></html>\n")
    tmp_out = f"{out}.tmp-{os.getpid()}"
    with open(tmp_out, "w", encoding="utf-8") as f:
        f.write(page)
    os.replace(tmp_out, out)
    return out
