"""The overlap chart's legend never covers a bar (issue 40, also seen: the PNG legend covered one).

Bars that reach the top in every column leave no free corner inside the axes; the legend's drawn box and each
bar's drawn box are measured on the rendered figure (matplotlib's own geometry, not tracekit's)."""

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from tracekit.commands.plot import hidden_exposed_figure  # noqa: E402


def test_legend_covers_no_bar():
    labels = [str(r) for r in range(4)]
    fig = hidden_exposed_figure(plt, labels, [6.0] * 4, [4.0] * 4, [9.0] * 4, "rank", "ms", "Communication overlap")
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        ax = fig.axes[0]
        legend = ax.get_legend().get_window_extent(renderer)
        bars = [p.get_window_extent(renderer) for p in ax.patches]
        assert len(bars) == 8  # 4 hidden + 4 exposed
        covered = [b for b in bars if b.overlaps(legend)]
        assert not covered, f"the legend {legend} covers {len(covered)} bar(s)"
    finally:
        plt.close(fig)
