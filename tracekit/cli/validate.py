from __future__ import annotations

import click

import tracekit

from .options import emit, output_options, run_argument


@click.command("validate")
@run_argument
@click.option("--config", "config", type=click.Path(exists=True, dir_okay=False), default=None,
              help="JSON {model: {...}, plan: {...}}; default: the config recorded in the traces.")
@output_options
def validate_cmd(run, config, fmt, output):
    """Compare measured collectives with the analytic model, per collective and process group.

    Counts and bytes are totals over all ranks and profiled steps; errors in %.

    \b
    Example:
      tracekit validate examples/traces/ddp
      tracekit validate run/ --config my_job.json --format json
    """
    emit(tracekit.validate(run, config), fmt, output, title="validate — predicted vs measured")
