from __future__ import annotations

import json

import click

import tracekit

from ..commands.diff import STEPS_BY
from ..errors import UsageError
from ..render import to_json
from .options import chosen_columns, emit, output_options, run_argument

PARTS = ("collectives", "steps")


@click.command("diff")
@run_argument("run_a")
@run_argument("run_b")
@click.option("--steps-by", type=click.Choice(STEPS_BY), default="order", show_default=True,
              help="Pair steps by their position among each run's profiled steps (order: runs profiled at "
                   "different steps line up) or by their number.")
@click.option("--only", type=click.Choice(PARTS), default=None,
              help="One of the two tables (csv, parquet and --columns need one).")
@output_options
def diff_cmd(run_a, run_b, steps_by, only, fmt, output):
    """Compare run B with run A in two tables: collectives (per collective x process group x size bucket:
    count, bytes, kernel time, busbw, exposed time, largest changes first) and steps (step time, comm and
    exposed comm, averaged over ranks, steps paired by order or number). Runs or trace directories.

    \b
    Example:
      tracekit diff runs/before runs/after
      tracekit diff runs/before runs/after --steps-by number
      tracekit diff examples/traces/ddp examples/traces/fsdp --only collectives --format csv
    """
    if only is None and (fmt in ("csv", "parquet") or chosen_columns()):
        what = "--columns" if chosen_columns() else f"--format {fmt}" + (f" (from -o {output})" if output else "")
        raise UsageError(f"{what} takes one table: add --only collectives or --only steps")
    tables = tracekit.diff(run_a, run_b, steps_by=steps_by)
    if only is not None:
        emit(tables[only], fmt, output, title=f"diff {only} — {run_b} against {run_a}")
        return
    if fmt == "json":  # one JSON object: {"collectives": [...], "steps": [...]}
        text = "{" + ", ".join(f"{json.dumps(p)}: {to_json(tables[p]).rstrip()}" for p in PARTS) + "}\n"
        if output is None:
            click.echo(text, nl=False)
        else:
            with open(output, "w") as f:
                f.write(text)
        return
    if output is not None:
        raise UsageError(f"-o with --format {fmt} takes one table: add --only collectives or --only steps")
    for p in PARTS:
        how = f", steps paired by {steps_by}" if p == "steps" else ""
        if tables[p].num_rows:
            emit(tables[p], fmt, None, title=f"diff {p} — {run_b} against {run_a}{how}")
        else:
            click.echo(f"diff {p}: no {'step' if p == 'steps' else 'collective'} in either run", err=True)
