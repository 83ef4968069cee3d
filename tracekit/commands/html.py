"""`tracekit html RUN -o report.html`: one self-contained page (no network: the Plotly bundle is embedded)
with the run's identity, then advise's findings, doctor's checks, then what summary, breakdown,
collectives, overlap, exposed --by group, skew, stragglers, why_late and, when the run carries a training
config, validate say, with interactive charts (values on hover). Long text wraps within its cell, so that
the numbers beside it stay in view. Wide tables show the columns a reader needs first, the rest one click
away; a section with nothing to show says why. Above 64 ranks a table of one row per rank shows each
number's spread and its worst rows, and the per-rank charts draw 64 ranks (html_tables.per_rank_table):
the page does not grow with the job."""

from __future__ import annotations

import datetime as _dt
import html

from .. import __version__, figures, html_tables
from ..errors import TracekitError
from ..html_tables import FIRST, identity_table, report_html, table, why
from ..reports import get
from ..table_meta import note_of
from .plot import SIZES_SQL

STYLE = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}th,td{border:1px solid #ddd;padding:.2em .5em}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.t{max-width:32em;overflow-wrap:anywhere}th{background:#f4f4f4;text-align:left}
p.why{color:#444;background:#f6f8fa;border-left:3px solid #9ab;padding:.4em .7em}
details{margin:.3em 0 .8em}summary{cursor:pointer;color:#0366d6}.scroll{overflow-x:auto;max-width:100%}
table.identity td:first-child{font-weight:600;background:#f8f8f8}p.meta{color:#666;margin-top:0}
.plot{width:100%}"""
# says on the browser's console if a chart failed to draw (the tests read the console)
CHECK = """<script>window.addEventListener("load",()=>{for(const d of document.querySelectorAll("div.plot")){
if(!d.querySelector(".main-svg")){console.error("chart failed to draw: "+d.id)}}})</script>"""

# the rows the charts take (from the public views; the tables beside them show the same numbers)
BY_STEP_SQL = """SELECT step, sum(overlap_ns) / 1e6 AS overlap_ms, sum(exposed_comm_ns) / 1e6 AS exposed_comm_ms,
       sum(compute_ns) / 1e6 AS compute_ms
FROM comm_overlap WHERE step IS NOT NULL GROUP BY step ORDER BY step"""
# the skew chart's cells: the waits of the first HEATMAP_INSTANCES clean instances only (what it draws), and
# its rows: every rank of a clean instance (a rank only in later instances still has its row)
WAITS_SQL = """WITH shown AS (SELECT instance_key, first_start_ns FROM collective_instances WHERE status = 'clean'
                ORDER BY first_start_ns, instance_key LIMIT $limit)
SELECT s.instance_key, s.first_start_ns, w.rank, w.wait_ns FROM collective_waits w JOIN shown s USING (instance_key)
ORDER BY s.first_start_ns, w.rank"""
WAIT_RANKS_SQL = """SELECT DISTINCT w.rank FROM collective_waits w JOIN collective_instances i USING (instance_key)
WHERE i.status = 'clean' ORDER BY w.rank"""
# above PER_RANK_ROWS ranks (html_tables), the chart's rows: the $half ranks that waited least in all over the
# instances it draws (those the others waited for) and the $half that waited longest; and those ranks' waits
PICKED_WAITS_SQL = """WITH shown AS (SELECT instance_key, first_start_ns FROM collective_instances
               WHERE status = 'clean' ORDER BY first_start_ns, instance_key LIMIT $limit),
w AS (SELECT s.instance_key, s.first_start_ns, w.rank, w.wait_ns
      FROM collective_waits w JOIN shown s USING (instance_key)),
total AS (SELECT rank, sum(wait_ns) AS wait_ns FROM w GROUP BY rank),
picked AS (SELECT rank FROM (SELECT rank, row_number() OVER (ORDER BY wait_ns, rank) AS least,
                                   row_number() OVER (ORDER BY wait_ns DESC, rank) AS most FROM total)
           WHERE least <= $half OR most <= $half)
SELECT w.* FROM w JOIN picked USING (rank) ORDER BY first_start_ns, rank"""
HEATMAP_INSTANCES = 60

def _quoted(name: str) -> str:
    """A run's name as a shell word."""
    import shlex

    return shlex.quote(name)


def _chart(fig: dict | None, div_id: str, nothing: str) -> str:
    return figures.div(fig, div_id) if fig is not None else why(nothing)


def advice(run) -> str:
    from .advise import advise

    try:
        t = advise(run)
    except TracekitError as exc:
        return why(f"No advice: {exc}")
    note = note_of(t)
    return (table(t, FIRST["advise"]) if t.num_rows else why("Nothing to advise: no finding.")) + (
        why(note) if note else "")


def doctor(run) -> str:
    """doctor's findings, a rank list written with ranges (exact and short: 0-63,65)."""
    import pyarrow as pa

    from ..render.findings import rank_ranges

    t, body = report_html(run, "doctor")
    if "ranks" not in t.column_names or not t.num_rows:
        return body
    ranks = pa.array([rank_ranges(r) if r else r for r in t["ranks"].to_pylist()], pa.string())
    return table(t.set_column(t.column_names.index("ranks"), "ranks", ranks), list(get("doctor").first))


def sections(run) -> list[tuple[str, str]]:
    from .validate import validate

    ranks = run.sql("SELECT count(*) AS n FROM traces").column("n")[0].as_py()
    most = html_tables.PER_RANK_ROWS  # above this many ranks, per-rank tables and charts show some ranks
    def every(*args: str) -> tuple[int, str]:  # the run's ranks, and the command that gives every row
        return ranks, " ".join(("tracekit report", _quoted(run.name)) + args)

    from ..graph.page import section as critical_path_section

    out = [("What to change first (advise)", advice(run)),
           ("Health checks (doctor)", doctor(run)),
           ("Summary", report_html(run, "summary", per_rank=every("summary"))[1]),
           ("Where each step goes (breakdown)", report_html(run, "breakdown", per_rank=every("breakdown"))[1])]
    sizes = run.sql(SIZES_SQL).to_pylist()
    out.append(("Collectives by message size", report_html(run, "collectives")[1] + _chart(
        figures.message_sizes(sizes), "message_sizes",
        "No chart: no collective here has a message size (no communication, or traces recorded without "
        "record_shapes=True).")))
    t, body = report_html(run, "overlap", per_rank=every("overlap"))
    drawn = t
    if ranks > most and t.num_rows:  # the chart's bars: the ranks with the most exposed communication
        drawn = t.sort_by([("exposed_comm_ms", "descending"), ("rank", "ascending")]).slice(0, most)
        drawn = drawn.sort_by("rank")
        body += why(f"The chart draws the {drawn.num_rows} ranks with the most exposed communication, of {ranks:,}.")
    out.append(("Overlap per rank", body + _chart(
        figures.overlap(drawn.to_pylist(), "rank", "rank"), "overlap",
        "No chart: the traces hold no GPU kernel and no Gloo op, so there is no communication to overlap.")))
    steps = run.sql(BY_STEP_SQL).to_pylist()
    # a chart compares steps: -1 (time outside every step, kernels launched before the profile) is no step
    chart = (_chart(figures.overlap(steps, "step", "step"), "overlap_by_step", "")
             if len([s for s in steps if s["step"] != -1]) > 1 else
             why("No chart per step: " + ("the run has one step; the chart per rank above shows it." if steps else
                                         "the traces hold no ProfilerStep (profile with torch.profiler.schedule "
                                         "and call prof.step() once per training step).")))
    out.append(("Overlap and exposed communication per step (all ranks)",
                report_html(run, "overlap", "overlap_step", per_rank=every("overlap", "--by", "step"), by="step")[1]
                + chart))
    out.append(("Exposed communication by process group", report_html(run, "exposed", by="group")[1]))
    skew, body = report_html(run, "skew")
    if ranks > most:  # the chart's rows: some of the ranks (PICKED_WAITS_SQL), said under it
        waits = run.sql(PICKED_WAITS_SQL, {"limit": HEATMAP_INSTANCES, "half": most // 2}).to_pylist()
        fig = figures.skew_heatmap(waits, HEATMAP_INSTANCES)
        drawn_ranks = len({w["rank"] for w in waits})
        if fig is not None and drawn_ranks >= most:
            body += why(f"The chart draws {drawn_ranks} of the {ranks:,} ranks: the {most // 2} that "
                        f"waited least in all over its instances (those the others waited for) and the "
                        f"{most // 2} that waited longest.")
        elif fig is not None:
            body += why(f"The chart draws the {drawn_ranks} ranks of its instances, of {ranks:,}.")
    else:
        fig = figures.skew_heatmap(run.sql(WAITS_SQL, {"limit": HEATMAP_INSTANCES}).to_pylist(), HEATMAP_INSTANCES,
                                   ranks=run.sql(WAIT_RANKS_SQL).column("rank").to_pylist())
    out.append(("Skew across ranks (most skewed first)", body + _chart(
        fig, "skew", "No chart: no collective instance was matched cleanly across ranks (one rank, or none matched).")))
    out.append(("Stragglers: who arrives last", report_html(run, "stragglers", per_rank=every("stragglers"))[1]))
    out.append(("Why the last rank is late (why_late)", report_html(run, "why_late")[1]))
    out.append(("The critical path (replay of the dependency graph)", critical_path_section(run)))
    try:
        rows = validate(run)
    except TracekitError as exc:
        text = str(exc).split(": ", 1)[-1] if str(exc).startswith(str(run.name)) else str(exc)
        out.append(("Measured against the model (validate)", why(
            "Not compared: " + text.replace("; pass one with --config FILE", "; `tracekit validate --config FILE` "
                                            "takes one"))))
    else:
        out.append(("Measured against the model (validate)", table(rows, FIRST["validate"]) + _chart(
            figures.measured_vs_predicted(rows.to_pylist()), "measured_vs_predicted",
            "No chart: no collective has both a predicted and a measured volume.")))
    return out


# the views most of the page's queries read (the collectives report and chart, advise's rules, exposed,
# whatif's points): computed once for the page, as temporary tables that shadow them (as advise does for
# step_breakdown; tracekit/shadow.py), instead of once per query over every rank's collectives
SHARED_VIEWS = ("collectives", "comm_exposure")


def write_html(run, out: str, plotly_js: str = "inline") -> str:
    """The page of ``run`` to ``out``, Plotly's bundle in it or beside it (``plotly_js``: figures.PLOTLY_JS)."""

    from ..graph.shared import computed_once as graph_once
    from ..shadow import computed_once

    with computed_once(run, SHARED_VIEWS), graph_once(run):
        head = (f"<h1>tracekit report: {html.escape(run.name)}</h1>"
                f"<p class=\"meta\">tracekit {__version__}, {_dt.datetime.now().isoformat(timespec='seconds')}</p>"
                + identity_table(run))
        body = "".join(f"<h2>{html.escape(title)}</h2>{content}" for title, content in sections(run))
    page = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>tracekit report: {html.escape(run.name)}</title><style>{STYLE}</style>"
            f"{figures.plotly_script(out, plotly_js)}</head><body>{head}{body}{CHECK}</body></html>\n")
    from ..render.target import target

    with target(out, binary=True) as f:  # whole or not at all; a path it cannot write: an error naming it
        f.write(page.encode("utf-8"))
    return out
