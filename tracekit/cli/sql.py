from __future__ import annotations

import click

from ..api import open as api_open
from ..render import emit
from .options import output_options, run_argument


@click.command("sql")
@run_argument
@click.argument("query")
@output_options
@click.option("--unsafe", is_flag=True,
              help="Lift the read-only limits: allow any statement (COPY, ATTACH, CREATE, SET, INSTALL ...), "
                   "files outside the run and extensions. Only for SQL you trust.")
def sql_cmd(run, query, fmt, output, unsafe):
    """Run a SQL query (DuckDB) over a run and print the result.

    RUN is a run directory, or a trace file/directory (ingested into a cache first). By default the query
    can only read the run: SELECT and EXPLAIN statements, no file outside the run, no extension install,
    configuration locked. --unsafe lifts that.

    \b
    Example:
      tracekit sql run/ "SELECT rank, count(*) AS events FROM events GROUP BY rank ORDER BY rank"
      tracekit sql run/ "SELECT * FROM traces" --format json
    """
    r = api_open(run)
    table = (r if unsafe else r.read_only()).sql(query)
    emit(table, fmt, output)
