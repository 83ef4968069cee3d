from __future__ import annotations

import json

import click

import tracekit

from ..errors import TracekitError
from ..render import emit
from ..validate import validate
from .options import output_options, run_argument


@click.command("validate")
@run_argument
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="JSON {model: {...}, plan: {...}}; default: the config recorded in the traces.")
@output_options
def validate_cmd(run, config_file, fmt, output):
    """Compare measured collectives with the analytic model, per collective and process group.

    Counts and bytes are totals over all ranks and profiled steps; errors in %.

    \b
    Example:
      tracekit validate examples/traces/ddp
      tracekit validate run/ --config my_job.json --format json
    """
    config = None
    if config_file:
        try:
            with open(config_file) as f:
                config = json.load(f)
        except ValueError as exc:
            raise TracekitError(f"{config_file}: not valid JSON ({exc})") from None
    emit(validate(tracekit.open(run), config), fmt, output, title="validate — predicted vs measured")
