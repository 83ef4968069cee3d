from __future__ import annotations

import click

from ..api import open as api_open
from ..reports import get
from ..render import emit
from .options import output_options, run_argument


@click.command("doctor")
@run_argument
@output_options
def doctor_cmd(run, fmt, output):
    """Health checks of a run, each finding with its severity and a fix: ranks missing against the
    world size, step sets that differ, no ProfilerStep, no message sizes, NCCL kernels without metadata,
    kernels without a launch event, clocks that disagree, unmatched collectives, a trace cut short,
    CUDA graphs, mixed versions. (The same as `tracekit report RUN doctor`.)

    \b
    Example:
      tracekit doctor run/
      tracekit doctor traces/ --format json
    """
    rep = get("doctor")
    emit(rep.run(api_open(run)), fmt, output, title=f"doctor — {rep.summary}")
