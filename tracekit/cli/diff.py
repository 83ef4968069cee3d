from __future__ import annotations

import click

from ..api import open as api_open
from ..compare import diff
from ..render import emit
from .options import output_options


@click.command("diff")
@click.argument("run_a", type=click.Path(exists=True))
@click.argument("run_b", type=click.Path(exists=True))
@output_options
def diff_cmd(run_a, run_b, fmt, output):
    """Compare run B with run A: per collective x process group x size bucket (count, bytes, kernel
    time, busbw, exposed time) and per step (step time, exposed comm), A, B and the change, largest
    changes first. Runs or trace directories.

    \b
    Example:
      tracekit diff runs/before runs/after
      tracekit diff examples/traces/ddp examples/traces/fsdp --format markdown
    """
    emit(diff(api_open(run_a), api_open(run_b)), fmt, output, title=f"diff — {run_b} against {run_a}")
