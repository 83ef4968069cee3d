from __future__ import annotations

import click

from ..api import open as api_open
from ..render import emit
from ..schema_doc import schema_table
from .options import output_options, run_argument


@click.command("schema")
@run_argument
@output_options
def schema_cmd(run, fmt, output):
    """List every table and view of a run with each column's type, meaning and unit.

    \b
    Example:
      tracekit schema run/
      tracekit schema run/ --format markdown
    """
    emit(schema_table(api_open(run)), fmt, output)
