from __future__ import annotations

import click

import tracekit

from ..errors import TracekitError
from .options import chosen_columns, emit, output_options, run_argument


@click.command("advise")
@run_argument
@click.option("--sql", "show_sql", type=int, default=None, metavar="N",
              help="Print the SQL behind finding N (to rerun it with tracekit sql RUN).")
@output_options
def advise_cmd(run, show_sql, fmt, output):
    """What to change first: what bounds the job's step (its GPUs, its hosts busy or idle, or ranks
    waiting for late ones), then findings ranked by the time each would save per step (ms and % of the
    job's step), each with where, the evidence, the change to try and how sure it is: late ranks,
    exposed communication per group and collective, another plan (tracekit whatif), then trace hygiene
    (doctor). Each saving is the job's step replayed without its cause: they do not add up (fixing one
    changes what the others cost). Rules: docs/advise.md.

    \b
    Example:
      tracekit advise run/
      tracekit advise run/ --sql 1
    """
    from .. import sql_files as _sql

    table = tracekit.advise(run)
    if show_sql is None:
        title = "advise — ranked findings (saving per step)"
        if fmt == "table" and not chosen_columns():  # sentences in nine columns: one block per finding
            _print_blocks(table, title, output)
        else:
            emit(table, fmt, output, title=title)
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


def _print_blocks(table, title, output) -> None:
    """The findings as blocks (render.findings) on stdout or in ``output``; then the note (the step they are
    per, how the savings combine, what was not found) on stderr, wrapped to the terminal."""
    import shutil
    import sys
    import textwrap

    from ..render import safe_text
    from ..render.findings import print_findings
    from ..table_meta import note_of

    if output is None:
        print_findings(table, title)
        sys.stdout.flush()  # the note follows the findings on a terminal that shows both streams
    else:
        from rich.console import Console

        from ..render.target import target
        with target(output, binary=False) as f:
            print_findings(table, title, Console(file=f, width=100))
    note = note_of(table)
    if note:
        width = shutil.get_terminal_size((80, 24)).columns if sys.stderr.isatty() else 100
        print(textwrap.fill(safe_text(note), width=max(40, width)), file=sys.stderr)
