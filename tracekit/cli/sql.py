from __future__ import annotations

import click

import tracekit

from ..render.stream import write_batches
from ..sandbox import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S
from .options import chosen_columns, output_options, run_argument


@click.command("sql", context_settings={"ignore_unknown_options": True})  # a query may start with --
@run_argument
@click.argument("query")
@output_options
@click.option("--timeout", type=click.FloatRange(min=0), default=DEFAULT_TIMEOUT_S, show_default=True,
              metavar="SECONDS", help="Stop the query after this long (0: no limit).")
@click.option("--memory", "memory_mb", type=click.IntRange(min=64), default=DEFAULT_MEMORY_MB, show_default=True,
              metavar="MB", help="DuckDB's memory for the query; past it, it spills to a private temporary "
                                 "directory or fails.")
@click.option("--unsafe", is_flag=True,
              help="Lift the read-only limits: allow any statement (COPY, ATTACH, CREATE, SET, INSTALL ...), "
                   "files outside the run and extensions. Only for SQL you trust.")
def sql_cmd(run, query, fmt, output, timeout, memory_mb, unsafe):
    """Run a SQL query (DuckDB) over a run and print the result.

    RUN is a run directory, or a trace file/directory (ingested into a cache first). By default the query
    can only read the run: SELECT statements and EXPLAIN of one, no file outside the run, no extension
    install, configuration locked, --memory and --timeout limits. The result is written as it is read
    (csv, json, markdown and parquet hold one batch of rows in memory at a time; the table shows the
    first 10,000 rows and counts the rest). --unsafe lifts the read-only limits.

    \b
    Example:
      tracekit sql run/ "SELECT rank, count(*) AS events FROM events GROUP BY rank ORDER BY rank"
      tracekit sql run/ "SELECT * FROM traces" --format json
    """
    with tracekit.sql(run, query, timeout=timeout, memory_mb=memory_mb, unsafe=unsafe, own_process=True) as result:
        write_batches(result.schema, result, fmt, output, columns=chosen_columns())
