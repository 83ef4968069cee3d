from __future__ import annotations

import click

from .. import plot as tkplot
from ..api import open as api_open


@click.command("plot")
@click.argument("run", type=click.Path(exists=True))
@click.option("--kind", type=click.Choice(["sizes", "overlap"]), default="sizes", show_default=True,
              help="sizes: message-size distribution per collective; overlap: hidden vs exposed comm per rank")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="PNG file to write.")
def plot_cmd(run, kind, output):
    """Draw a plot of a run (PNG).

    \b
    Example:
      tracekit plot examples/traces/fsdp -o sizes.png
      tracekit plot run/ --kind overlap -o overlap.png
    """
    r = api_open(run)
    if kind == "sizes":
        tkplot.message_sizes({run: r}, output)
    else:
        tkplot.overlap(r, output)
    click.echo(output)
