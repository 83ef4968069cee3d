from __future__ import annotations

import click

import tracekit

from ..errors import TracekitError
from ..render import emit
from .options import output_options, run_argument


@click.command("advise")
@run_argument
@click.option("--sql", "show_sql", type=int, default=None, metavar="N",
              help="Print the SQL behind finding N (to rerun it with tracekit sql RUN).")
@output_options
def advise_cmd(run, show_sql, fmt, output):
    """What to change first: findings ranked by the time each would save per step (ms and % of the
    step), each with where, the evidence, the change to try and how sure it is. Exposed communication
    per group and collective and its cause (latency-bound, serialized with compute, bandwidth below the
    link), a straggler rank, pipeline bubbles, another plan (tracekit whatif), then trace hygiene
    (doctor). Savings add up except 'another plan' (an alternative). Rules: docs/advise.md.

    \b
    Example:
      tracekit advise run/
      tracekit advise run/ --sql 1
    """
    from .. import sql as _sql
    from ..advise import advise

    table = advise(tracekit.open(run))
    if show_sql is None:
        emit(table, fmt, output, title="advise — ranked findings (saving per step)")
        return
    rows = table.to_pylist()
    if not 1 <= show_sql <= len(rows):
        raise TracekitError(f"{run}: there is no finding {show_sql}; advise found {len(rows)}")
    sources = [w.split(" ")[0] for w in rows[show_sql - 1]["sql"].split("; ")]
    for src in sources:
        if src.startswith("sql/reports/"):
            name = src.removeprefix("sql/reports/").removesuffix(".sql")
            click.echo(f"-- {src}\n{_sql.load('reports', name).text}")
        else:
            click.echo(f"-- {rows[show_sql - 1]['sql']}")
