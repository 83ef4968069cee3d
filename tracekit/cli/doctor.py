from __future__ import annotations

import click

import tracekit

from ..reports import get
from ..words import plural
from .options import chosen_columns, emit, output_options, run_argument

# severities, least to most severe; --fail-on LEVEL fails on LEVEL and every one after it
LEVELS = ("info", "warning", "error")
FINDINGS_EXIT = 6  # a distinct code: the checks ran and found something (1-5 are errors running them)


@click.command("doctor")
@run_argument
@output_options
@click.option("--fail-on", type=click.Choice(LEVELS[1:]), default=None,
              help=f"Exit {FINDINGS_EXIT} when a finding is this severe or more (for CI); default: exit 0 "
                   "whatever is found.")
def doctor_cmd(run, fmt, output, fail_on):
    """Health checks of a run, each finding with its severity and a fix: ranks missing against the
    world size, step sets that differ, no ProfilerStep, no message sizes, NCCL kernels without metadata,
    comm kernels of libraries outside c10d (DeepEP, NVSHMEM, ...), kernels launched before the profile,
    kernels without a launch event, clocks that disagree, unmatched collectives, a trace cut short,
    CUDA graphs, mixed versions. (The same as `tracekit report RUN doctor`.)

    \b
    Example:
      tracekit doctor run/
      tracekit doctor traces/ --format json
      tracekit doctor run/ --fail-on warning     # in CI: exit 6 on any warning or error
    """
    rep = get("doctor")
    table = tracekit.doctor(run)
    title = f"doctor — {rep.summary}"
    if fmt == "table" and not chosen_columns():  # sentences in five columns: one block per finding
        _print_blocks(table, title, output)
    else:
        emit(table, fmt, output, title=title)
    if fail_on:
        worse = LEVELS[LEVELS.index(fail_on):]
        n = sum(1 for s in table.column("severity").to_pylist() if s in worse)
        if n:
            click.echo(f"doctor: {plural(n, 'finding', 'findings')} at {fail_on} or above (--fail-on {fail_on})",
                       err=True)
            raise click.exceptions.Exit(FINDINGS_EXIT)


def _print_blocks(table, title, output) -> None:
    """The findings as blocks (render.findings), wrapped to the terminal (100 columns into a file)."""
    from ..render.findings import DOCTOR_ORDER, doctor_heading, print_findings

    if output is None:
        print_findings(table, title, heading=doctor_heading, order=DOCTOR_ORDER)
        return
    from rich.console import Console

    from ..render.target import target
    with target(output, binary=False) as f:
        print_findings(table, title, Console(file=f, width=100), heading=doctor_heading, order=DOCTOR_ORDER)
