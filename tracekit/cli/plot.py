from __future__ import annotations

import click

import tracekit

from ..errors import TracekitError
from .options import check_output, run_argument


@click.command("plot")
@run_argument
@click.option("--kind", type=click.Choice(["sizes", "overlap"]), default="sizes", show_default=True,
              help="sizes: message-size distribution per collective; overlap: hidden vs exposed comm per rank")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="File to write: .html (an interactive chart, works offline) or .png (needs matplotlib: "
                   "pip install 'tracekit[plot]').")
def plot_cmd(run, kind, output):
    """Draw a chart of a run: an interactive HTML page (.html), or a PNG image (.png, with matplotlib).

    \b
    Example:
      tracekit plot examples/traces/fsdp -o sizes.html
      tracekit plot run/ --kind overlap -o overlap.png
    """
    check_output(output)
    r = tracekit.open(run)
    if output.endswith((".html", ".htm")):
        _html(r, kind, output)
    elif output.endswith(".png"):
        from .. import plot as tkplot
        if kind == "sizes":
            tkplot.message_sizes({run: r}, output)
        else:
            tkplot.overlap(r, output)
    else:
        raise TracekitError(f"-o {output}: give a .html file (interactive chart) or a .png file (image)")
    click.echo(output)


def _html(r, kind: str, output: str) -> None:
    import os

    from .. import figures
    from ..plot import SIZES_SQL
    from ..reports import get

    if kind == "sizes":
        fig, title = figures.message_sizes(r.sql(SIZES_SQL).to_pylist()), "Message sizes per collective"
        nothing = "no collective has a message size (no communication, or traces recorded without record_shapes=True)"
    else:
        fig = figures.overlap(get("overlap").run(r).to_pylist(), "rank", "rank")
        title = "Communication overlap per rank"
        nothing = "the traces hold no GPU kernel and no Gloo op"
    if fig is None:
        raise TracekitError(f"{r.name}: nothing to plot: {nothing}")
    tmp = f"{output}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(figures.page(fig, f"{title}: {r.name}"))
    os.replace(tmp, output)
