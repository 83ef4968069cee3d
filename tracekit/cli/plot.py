from __future__ import annotations

import click

import tracekit

from .options import check_output, run_argument


@click.command("plot")
@run_argument
@click.option("--kind", type=click.Choice(["sizes", "overlap"]), default="sizes", show_default=True,
              help="sizes: message-size distribution per collective; overlap: hidden vs exposed comm per rank")
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False),
              help="File to write: .html (an interactive chart, works offline) or .png (needs matplotlib: "
                   "pip install 'tracekit[plot]').")
def plot_cmd(run, kind, out):
    """Draw a chart of a run: an interactive HTML page (.html), or a PNG image (.png, with matplotlib).

    \b
    Example:
      tracekit plot examples/traces/fsdp -o sizes.html
      tracekit plot run/ --kind overlap -o overlap.png
    """
    check_output(out)
    click.echo(tracekit.plot(run, out, kind))
