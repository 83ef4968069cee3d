from __future__ import annotations

import click

import tracekit

from .options import check_output, run_argument


@click.command("html")
@run_argument
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False), help="The page to write.")
@click.option("--plotly-js", type=click.Choice(["inline", "beside"]), default="inline", show_default=True,
              help="The charts' JavaScript (4.8 MB) in the page, or written once beside it as "
                   "plotly-VERSION.min.js and shared by the pages in that folder (a page of tens of KB; "
                   "copy the two files together).")
def html_cmd(run, out, plotly_js):
    """A one-page, self-contained HTML report (no network): the run's identity (ranks, hosts, GPUs,
    versions, steps, window), summary, collectives, overlap, exposed by group, skew, validate when the
    run carries a config, with interactive charts (values on hover).

    \b
    Example:
      tracekit html run/ -o report.html
      tracekit html run/ -o reports/run.html --plotly-js beside
    """
    check_output(out)
    click.echo(tracekit.html(run, out, plotly_js))
