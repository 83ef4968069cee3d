"""Plots of runs (matplotlib, the `plot` extra). Data comes from views and reports; nothing is computed
here that a table does not already show.

    tracekit.commands.plot.message_sizes({"ddp": run1, "fsdp": run2}, "sizes.png")
    tracekit.commands.plot.overlap(run, "overlap.png")
"""

from __future__ import annotations

from ..errors import TracekitError


def _plt():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TracekitError("PNG plots need matplotlib: pip install 'tracekit[plot]' (or write .html: an "
                            "interactive chart that needs nothing more)") from None
    return plt


def _save(plt, fig, path: str) -> str:
    fig.tight_layout()
    # bbox "tight": a legend placed beside the axes (``_legend_beside``) is inside the image
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def _legend_beside(ax, fontsize: int = 7) -> None:
    """The legend to the right of the axes, never over a bar (inside, "best" still covers one when every
    corner holds a bar)."""
    ax.legend(fontsize=fontsize, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


SIZES_SQL = """
SELECT collective, size_bucket_lo, any_value(size_bucket) AS size_bucket, count(*) AS n
FROM collectives WHERE bytes IS NOT NULL GROUP BY collective, size_bucket_lo ORDER BY size_bucket_lo
"""


def message_sizes(runs: dict, path: str, title: str = "Message sizes per collective") -> str:
    """One panel per run (scheme): count of collectives per size bucket, a bar group per collective."""
    plt = _plt()
    data = {label: run.sql(SIZES_SQL).to_pylist() for label, run in runs.items()}
    empty = [label for label, rows in data.items() if not rows]
    if empty:
        raise TracekitError(f"no message sizes to plot for {', '.join(map(str, empty))}: no collective there has "
                            "a size (no communication, or traces recorded without record_shapes=True)")
    fig, axes = plt.subplots(len(runs), 1, figsize=(8, 2.6 * len(runs)), squeeze=False)
    for ax, (label, rows) in zip(axes[:, 0], data.items(), strict=True):
        buckets = sorted({(r["size_bucket_lo"], r["size_bucket"]) for r in rows})
        colls = sorted({r["collective"] for r in rows})
        width = 0.8 / max(len(colls), 1)
        for i, c in enumerate(colls):
            counts = {r["size_bucket_lo"]: r["n"] for r in rows if r["collective"] == c}
            ax.bar([j + i * width for j in range(len(buckets))], [counts.get(lo, 0) for lo, _ in buckets],
                   width, label=c)
        # bucket labels turned, so that neighbours never overlap
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(buckets))], [b for _, b in buckets], fontsize=7,
                      rotation=35, ha="right")
        ax.set_title(label, fontsize=9)
        ax.set_ylabel("collectives")
        _legend_beside(ax)
    fig.suptitle(title)
    return _save(plt, fig, path)


def _hidden_exposed(path: str, labels: list[str], hidden_ms: list, exposed_ms: list, compute_ms: list | None,
                    xlabel: str, ylabel: str, title: str) -> str:
    """Stacked bars: communication hidden by compute, exposed on top (and compute as a tick, if given)."""
    plt = _plt()
    fig = hidden_exposed_figure(plt, labels, hidden_ms, exposed_ms, compute_ms, xlabel, ylabel, title)
    return _save(plt, fig, path)


def hidden_exposed_figure(plt, labels: list[str], hidden_ms: list, exposed_ms: list, compute_ms: list | None,
                          xlabel: str, ylabel: str, title: str):
    """The figure of ``_hidden_exposed``, not yet saved (a test measures where its legend lies)."""
    fig, ax = plt.subplots(figsize=(max(4, 0.6 * len(labels) + 2), 3.2))
    ax.bar(labels, hidden_ms, label="comm hidden by compute")
    ax.bar(labels, exposed_ms, bottom=hidden_ms, label="exposed comm")
    if compute_ms is not None:
        ax.plot(labels, compute_ms, "k_", markersize=20, label="compute")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    _legend_beside(ax)
    ax.set_title(title)
    return fig


def overlap(run, path: str) -> str:
    """Per rank: communication hidden behind compute vs exposed, and compute, in ms."""
    rows = run.sql("SELECT rank, compute_ns, overlap_ns, exposed_comm_ns FROM comm_overlap WHERE step IS NULL "
                   "ORDER BY rank").to_pylist()
    if not rows:
        raise TracekitError(f"{run.name}: nothing to plot: the traces hold no GPU kernel and no Gloo op")

    def ms(k):
        return [r[k] / 1e6 for r in rows]

    return _hidden_exposed(path, [str(r["rank"]) for r in rows], ms("overlap_ns"), ms("exposed_comm_ns"),
                           ms("compute_ns"), "rank", "ms", "Communication overlap")


def lines(rows: list[dict], x: str, y: str, series: str, path: str, xlabel: str, ylabel: str, title: str) -> str:
    """A line per series (e.g. scheme) of y against x, from plain rows."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for name in sorted({r[series] for r in rows}):
        pts = sorted((r[x], r[y]) for r in rows if r[series] == name)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=7)
    return _save(plt, fig, path)


def measured_vs_predicted(rows: list[dict], path: str) -> str:
    """Scatter of measured against predicted bytes per (run, collective, group); the diagonal is exact."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.6, 4.2))
    pts = [(r["predicted_bytes"], r["measured_bytes"], r.get("label", "")) for r in rows
           if r["predicted_bytes"] and r["measured_bytes"]]
    for label in sorted({p[2] for p in pts}):
        sel = [p for p in pts if p[2] == label]
        ax.scatter([p[0] for p in sel], [p[1] for p in sel], label=label, s=18)
    if pts:
        lo, hi = min(min(p[0], p[1]) for p in pts), max(max(p[0], p[1]) for p in pts)
        ax.plot([lo, hi], [lo, hi], "k--", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("predicted bytes")
    ax.set_ylabel("measured bytes")
    ax.set_title("Measured vs predicted volume")
    if any(p[2] for p in pts):
        ax.legend(fontsize=6)
    return _save(plt, fig, path)


def overlap_by_step(run, path: str) -> str:
    """Per step (summed over ranks): communication hidden by compute and exposed, in ms."""
    rows = run.sql("SELECT step, CAST(sum(overlap_ns) AS DOUBLE) AS o, CAST(sum(exposed_comm_ns) AS DOUBLE) AS e "
                   "FROM comm_overlap "
                   "WHERE step IS NOT NULL GROUP BY step ORDER BY step").to_pylist()
    if not rows:
        raise TracekitError(f"{run.name}: nothing to plot per step: no interval at all")
    return _hidden_exposed(path, [str(r["step"]) for r in rows], [r["o"] / 1e6 for r in rows],
                           [r["e"] / 1e6 for r in rows], None, "step (-1: outside steps)", "ms, all ranks",
                           "Communication per step")


def skew_heatmap(run, path: str, limit: int = 60) -> str:
    """Rank x collective instance (clean ones, in time order): how long each rank waited for the last."""
    plt = _plt()
    rows = run.sql("SELECT w.rank, i.first_start_ns, w.wait_ns FROM collective_waits w "
                   "JOIN collective_instances i USING (instance_key) WHERE i.status = 'clean' "
                   "ORDER BY i.first_start_ns").to_pylist()
    if not rows:
        raise TracekitError(f"{run.name}: no clean collective instance to draw (one rank, or none matched)")
    starts = sorted({r["first_start_ns"] for r in rows})[:limit]
    col = {t: i for i, t in enumerate(starts)}
    ranks = sorted({r["rank"] for r in rows})
    grid = [[float("nan")] * len(starts) for _ in ranks]
    for r in rows:
        if r["first_start_ns"] in col:
            grid[ranks.index(r["rank"])][col[r["first_start_ns"]]] = r["wait_ns"] / 1e3
    fig, ax = plt.subplots(figsize=(min(12, 2 + 0.18 * len(starts)), 1.2 + 0.3 * len(ranks)))
    im = ax.imshow(grid, aspect="auto", cmap="viridis")
    ax.set_yticks(range(len(ranks)), [str(r) for r in ranks], fontsize=7)
    ax.set_xlabel("collective instance (time order)")
    ax.set_ylabel("rank")
    fig.colorbar(im, ax=ax, label="wait for the last rank, µs")
    ax.set_title("Skew: who waited for whom")
    return _save(plt, fig, path)


def fitted_laws(pts: dict, laws: list[dict], path: str) -> str:
    """Measured transfer times of clean instances against bus traffic, per collective and kind of group
    (``pts``: tracekit.commands.whatif.points), with the fitted laws (``laws``: tracekit.commands.whatif.fit, latency +
    traffic / bus bandwidth) as lines."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4))
    for i, f in enumerate(laws):
        mine = [(traffic, t_ns / 1e3) for traffic, t_ns, *_ in pts[(f["collective"], f["kind"], f["link_kind"])]]
        color = f"C{i % 10}"
        ax.scatter([x for x, _ in mine], [y for _, y in mine], s=10, color=color, alpha=0.6)
        lo, hi = min(x for x, _ in mine), max(x for x, _ in mine)
        xs = [lo * 0.5, hi * 2]
        ax.plot(xs, [f["latency_us"] + x / (f["bus_gbps"] * 1e3) for x in xs], color=color,
                label=f"{f['collective']} {f['kind']} {f['link_kind']}: {f['latency_us']:.1f} us + traffic / "
                      f"{f['bus_gbps']:.1f} GB/s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("bus traffic, bytes (message x bus factor)")
    ax.set_ylabel("transfer time, us")
    ax.set_title("Fitted network laws (tracekit whatif)")
    ax.legend(fontsize=7)
    return _save(plt, fig, path)


def draw(run, out: str, kind: str = "sizes") -> str:
    """`tracekit plot`: the chart ``kind`` (sizes, overlap) of a run to ``out``, an interactive HTML page
    (.html, .htm) or a PNG image (.png)."""
    if kind not in ("sizes", "overlap"):
        raise TracekitError(f"no plot kind {kind!r}: sizes or overlap")
    if out.endswith((".html", ".htm")):
        return _page(run, kind, out)
    if out.endswith(".png"):
        return message_sizes({run.name: run}, out) if kind == "sizes" else overlap(run, out)
    raise TracekitError(f"-o {out}: give a .html file (interactive chart) or a .png file (image)")


def _page(run, kind: str, out: str) -> str:

    from .. import figures
    from ..reports import get

    if kind == "sizes":
        fig, title = figures.message_sizes(run.sql(SIZES_SQL).to_pylist()), "Message sizes per collective"
        nothing = "no collective has a message size (no communication, or traces recorded without record_shapes=True)"
    else:
        fig = figures.overlap(get("overlap").run(run).to_pylist(), "rank", "rank")
        title = "Communication overlap per rank"
        nothing = "the traces hold no GPU kernel and no Gloo op"
    if fig is None:
        raise TracekitError(f"{run.name}: nothing to plot: {nothing}")
    from ..render.target import target

    with target(out, binary=True) as f:  # whole or not at all; a path it cannot write: an error naming it
        f.write(figures.page(fig, f"{title}: {run.name}").encode("utf-8"))
    return out
