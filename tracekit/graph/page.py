"""The HTML page's section on the critical path: per rank, the time it holds the critical path, by cause
(a chart), and the replay's error per rank and step (a table). Rows in, HTML out."""

from __future__ import annotations

from ..errors import TracekitError
from ..figures import _layout, div
from ..html_tables import table, why

# one color per cause, stable across pages (compute families share blue shades)
COLORS = {"comm transfer": "#ff7f0e", "waiting at a collective": "#d62728", "launch/CPU": "#9467bd",
          "starved": "#8c564b", "idle": "#7f7f7f"}


def by_cause_figure(rows: list[dict]) -> dict | None:
    """Stacked bars: per rank, ms on the critical path by cause (summed over steps). Rows: critical_path's."""
    if not rows:
        return None
    ranks = sorted({r["rank"] for r in rows})
    causes = sorted({r["cause"] for r in rows}, key=lambda c: (not c.startswith("compute"), c))
    data = []
    for c in causes:
        ms = {k: 0.0 for k in ranks}
        for r in rows:
            if r["cause"] == c:
                ms[r["rank"]] += r["ms"]
        bar = {"type": "bar", "name": c, "x": [str(k) for k in ranks], "y": [ms[k] for k in ranks],
               "hovertemplate": f"rank %{{x}}<br>{c}: %{{y:,.3f}} ms<extra></extra>"}
        if c in COLORS:
            bar["marker"] = {"color": COLORS[c]}
        data.append(bar)
    return {"data": data, "layout": _layout("rank", "ms on the critical path (all steps)", barmode="stack")}


_NO_STEPS = ("No critical path: the traces hold no ProfilerStep (profile with torch.profiler.schedule and call "
             "prof.step() once per training step).")


def section(run) -> str:
    import duckdb

    from .critical import critical_path
    from .from_run import path_replay
    from .shared import too_big

    big = too_big(run)
    if big:
        return why(f"Not drawn: {big}.")
    if not run.sql("SELECT 1 FROM steps LIMIT 1").num_rows:  # said before the graph is read (10,000 ranks)
        return why(_NO_STEPS)
    try:
        r = path_replay(run)
    except TracekitError as exc:
        return why(f"No replay: {exc}")
    except duckdb.IOException:  # a copy of the run without its events files
        return why("No replay: the run's events files are not here, and the dependency graph is built from them.")
    rows = critical_path(r).to_pylist()
    if not rows:
        return why(_NO_STEPS)
    steps = len({x["step"] for x in rows})
    from .critical import thread_gap_note

    caveat = thread_gap_note(rows)
    text = why(f"The chain of work that sets each step's end, on the replay of the job's dependency graph, "
               f"summed over {steps} step{'s' if steps > 1 else ''}: which rank holds the step and why "
               f"(`tracekit report RUN critical_path` lists the chain). Below: each rank's step replayed "
               f"against measured (`tracekit report RUN replay`).")
    if caveat:
        text += why("Read with care: " + caveat + ".")
    fig = by_cause_figure(rows)
    return text + div(fig, "critical_path") + table(r.steps(), ["rank", "step", "measured_ms", "replayed_ms",
                                                                  "error_pct", "unexplained_ms"])
