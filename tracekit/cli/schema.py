from __future__ import annotations

import click

import tracekit

from .options import emit, output_options, run_argument


@click.command("schema")
@run_argument
@click.argument("table", required=False)
@output_options
def schema_cmd(run, table, fmt, output):
    """List every table and view of a run with each column's type, meaning and unit; with TABLE, that
    table or view only (or a report's columns: tracekit schema RUN summary).

    \b
    Example:
      tracekit schema run/
      tracekit schema run/ collectives
      tracekit schema run/ --format markdown
    """
    emit(tracekit.schema(run, table), fmt, output)
