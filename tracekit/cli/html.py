from __future__ import annotations

import click

import tracekit

from .options import check_output, run_argument


@click.command("html")
@run_argument
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False), help="The page to write.")
def html_cmd(run, out):
    """A one-page, self-contained HTML report (no network): the run's identity (ranks, hosts, GPUs,
    versions, steps, window), summary, collectives, overlap, exposed by group, skew, validate when the
    run carries a config, with interactive charts (values on hover).

    \b
    Example:
      tracekit html run/ -o report.html
    """
    check_output(out)
    click.echo(tracekit.html(run, out))
