from __future__ import annotations

import click

from ..api import open as api_open
from ..render import emit
from .options import output_options, run_argument


@click.command("sql")
@run_argument
@click.argument("query")
@output_options
def sql_cmd(run, query, fmt, output):
    """Run a SQL query (DuckDB) over a run and print the result.

    RUN is a run directory, or a trace file/directory (ingested into a cache first).

    \b
    Example:
      tracekit sql run/ "SELECT rank, count(*) AS events FROM events GROUP BY rank ORDER BY rank"
      tracekit sql run/ "SELECT * FROM traces" --format json
    """
    table = api_open(run).sql(query)
    emit(table, fmt, output)
