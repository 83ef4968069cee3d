"""Interactive charts for the HTML page, from rows (lists of dicts a report or view returned): each
function returns a Plotly figure as a plain dict (data, layout), or None when the rows hold nothing to
draw. Nothing is computed here that the rows do not already say.

Plotly, not matplotlib: values on hover, zoom, and one JavaScript bundle embedded in the page, so that
it works offline (as HTA's plotly output does). Every legend sits outside the plotting area (right of
it), so that it cannot cover a bar or a cell.
"""

from __future__ import annotations

import json
from importlib import resources

BLUE, ORANGE, GREY = "#1f77b4", "#ff7f0e", "#7f7f7f"  # comm hidden, comm exposed, compute
# legend right of the plotting area (x > 1 in paper coordinates): it never overlaps the data
_LEGEND = {"x": 1.02, "xanchor": "left", "y": 1, "yanchor": "top", "font": {"size": 11}}


def _layout(x_title: str, y_title: str, height: int = 320, **more) -> dict:
    # the top margin holds Plotly's tool bar above the plotting area, clear of the legend beside it
    return {"height": height, "margin": {"l": 70, "r": 20, "t": 36, "b": 70}, "legend": _LEGEND,
            "xaxis": {"title": {"text": x_title}, "type": "category", "automargin": True},
            "yaxis": {"title": {"text": y_title}, "rangemode": "tozero", "automargin": True},
            "hoverlabel": {"namelength": -1}, "font": {"family": "system-ui, sans-serif", "size": 12},
            "plot_bgcolor": "#fafafa", **more}


def message_sizes(rows: list[dict]) -> dict | None:
    """Grouped bars: collectives per message-size bucket, a bar per collective type. Rows: collective,
    size_bucket, size_bucket_lo, n."""
    rows = [r for r in rows if r["size_bucket"] is not None]
    if not rows:
        return None
    buckets = [b for _, b in sorted({(r["size_bucket_lo"], r["size_bucket"]) for r in rows})]
    data = []
    for c in sorted({r["collective"] for r in rows}):
        n = {r["size_bucket"]: r["n"] for r in rows if r["collective"] == c}
        data.append({"type": "bar", "name": c, "x": buckets, "y": [n.get(b, 0) for b in buckets],
                     "hovertemplate": f"{c}<br>%{{x}}: %{{y:,}} collectives<extra></extra>"})
    return {"data": data, "layout": _layout("message size", "collectives", barmode="group")}


def overlap(rows: list[dict], x: str, x_title: str) -> dict | None:
    """Per ``x`` (rank or step): communication hidden by compute and exposed, stacked, with compute as a
    bar of its own beside them. Rows: x, overlap_ms, exposed_comm_ms, compute_ms (ms)."""
    if not rows:
        return None
    xs = [str(r[x]) for r in rows]

    def bar(name, key, color, group, base=None):
        b = {"type": "bar", "name": name, "x": xs, "y": [r[key] for r in rows], "offsetgroup": group,
             "marker": {"color": color},
             "hovertemplate": f"{x_title} %{{x}}<br>{name}: %{{y:,.3f}} ms<extra></extra>"}
        if base is not None:
            b["base"] = [r[base] for r in rows]
        return b

    data = [bar("comm hidden by compute", "overlap_ms", BLUE, "comm"),
            bar("exposed comm", "exposed_comm_ms", ORANGE, "comm", base="overlap_ms"),
            bar("compute", "compute_ms", GREY, "compute")]
    return {"data": data, "layout": _layout(x_title, "ms", barmode="group")}


def skew_heatmap(rows: list[dict], limit: int = 60, ranks: list[int] | None = None) -> dict | None:
    """Rank x collective instance (labelled as the skew table labels it, in time order): how long each
    rank waited for the last to arrive, µs. Rows: instance_key, first_start_ns, rank, wait_ns (those of
    the first ``limit`` instances are drawn); ``ranks``: the chart's rows (default: the ranks in ``rows``)."""
    if not rows:
        return None
    order = sorted({(r["first_start_ns"], r["instance_key"]) for r in rows})[:limit]
    keys = [k for _, k in order]
    col = {k: i for i, k in enumerate(keys)}
    ranks = sorted(ranks if ranks is not None else {r["rank"] for r in rows})
    row = {rk: i for i, rk in enumerate(ranks)}
    z = [[None] * len(keys) for _ in ranks]
    for r in rows:
        if r["instance_key"] in col:
            z[row[r["rank"]]][col[r["instance_key"]]] = r["wait_ns"] / 1e3
    data = [{"type": "heatmap", "x": keys, "y": [str(rk) for rk in ranks], "z": z, "colorscale": "Viridis",
             "colorbar": {"title": {"text": "wait, µs"}},
             "hovertemplate": "%{x}<br>rank %{y} waited %{z:,.1f} µs<extra></extra>"}]
    layout = _layout("collective instance (time order)", "rank", height=max(220, 90 + 26 * len(ranks)))
    layout["yaxis"].update(autorange="reversed", type="category")  # every rank labelled
    return {"data": data, "layout": layout}


def measured_vs_predicted(rows: list[dict]) -> dict | None:
    """Measured against predicted bytes per collective and group; points on the diagonal are exact."""
    pts = [r for r in rows if r.get("predicted_bytes") and r.get("measured_bytes")]
    if not pts:
        return None
    lo = min(min(r["predicted_bytes"], r["measured_bytes"]) for r in pts)
    hi = max(max(r["predicted_bytes"], r["measured_bytes"]) for r in pts)
    data = [{"type": "scatter", "mode": "markers", "name": f"{r['collective']} {r['group']}",
             "x": [r["predicted_bytes"]], "y": [r["measured_bytes"]], "marker": {"size": 10},
             "hovertemplate": (f"{r['collective']} {r['group']}<br>predicted %{{x:,}} B<br>"
                               "measured %{y:,} B<extra></extra>")} for r in pts]
    data.append({"type": "scatter", "mode": "lines", "name": "exact", "x": [lo, hi], "y": [lo, hi],
                 "line": {"color": "black", "dash": "dash", "width": 1}, "hoverinfo": "skip"})
    layout = _layout("predicted bytes", "measured bytes", height=360)
    layout["xaxis"] = {"title": {"text": "predicted bytes"}, "type": "log"}
    layout["yaxis"] = {"title": {"text": "measured bytes"}, "type": "log"}
    return {"data": data, "layout": layout}


def plotly_js() -> str:
    """The Plotly JavaScript bundle that the plotly package ships (embedded once per page)."""
    return (resources.files("plotly") / "package_data" / "plotly.min.js").read_text(encoding="utf-8")


# how a page gets the bundle: in the page (one file that works anywhere, 4.8 MB of it the bundle), or as
# one file beside it that every page in that folder shares (a page of tens of KB; still offline)
PLOTLY_JS = ("inline", "beside")


def plotly_js_name() -> str:
    """The bundle's file name beside a page: its version in the name, so that pages made with another
    plotly never read a bundle they were not drawn for."""
    from importlib.metadata import version

    return f"plotly-{version('plotly')}.min.js"


def plotly_script(page_path: str, how: str = "inline") -> str:
    """The page's <script> element that loads Plotly. ``beside``: the bundle is written next to
    ``page_path`` first (whole, by a rename; left as it is when the same bundle is there, replaced, never
    written through, when a link or another file holds its name)."""
    import os

    if how not in PLOTLY_JS:
        from .errors import TracekitError
        raise TracekitError(f"--plotly-js {how}: inline or beside")
    if how == "inline":
        return f"<script>{plotly_js()}</script>"
    name = plotly_js_name()
    path = os.path.join(os.path.dirname(os.path.abspath(page_path)), name)
    bundle = plotly_js().encode("utf-8")
    if not (os.path.isfile(path) and not os.path.islink(path) and os.path.getsize(path) == len(bundle)
            and open(path, "rb").read() == bundle):
        tmp = f"{path}.tmp-{os.getpid()}"
        try:
            with open(tmp, "wb") as f:
                f.write(bundle)
            os.replace(tmp, path)  # a link there is replaced, its target untouched
        except OSError as exc:
            from .errors import TracekitError
            if os.path.exists(tmp):
                os.remove(tmp)
            raise TracekitError(f"{path}: cannot write Plotly's bundle beside the page ({exc.strerror}); check "
                                "that the directory exists and is writable, or use --plotly-js inline") from None
    return f'<script src="{name}"></script>'


def div(fig: dict, div_id: str) -> str:
    """A <div> and the script that draws ``fig`` in it (the bundle must be on the page)."""
    spec = script_json({"data": fig["data"], "layout": fig["layout"]})
    return (f'<div class="plot" id="{div_id}"></div><script>(function(s){{Plotly.newPlot("{div_id}", s.data, '
            f's.layout, {{displaylogo: false, responsive: true}})}})({spec});</script>')


def script_json(value) -> str:
    """``value`` as JSON to put inside a <script> element: every '<', '>' and '&' written as its \\u escape,
    so that no string in it ('<!--', '<script', '</script') can start a comment or tag or end the element,
    whatever state the HTML tokenizer is in (escaping '</' alone left '<!--<script>' able to swallow the
    page up to a later '</script>'). JavaScript reads the same value."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def page(fig: dict, title: str) -> str:
    """A self-contained HTML page with one chart (tracekit plot -o FILE.html)."""
    import html

    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<script>{plotly_js()}</script></head><body style=\"font-family:system-ui,sans-serif\">"
            f"<h2>{html.escape(title)}</h2>{div(fig, 'chart')}</body></html>\n")
