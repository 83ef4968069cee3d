from __future__ import annotations

import click

from ..api import open as api_open
from ..model import Plan
from ..render import emit
from ..whatif import fit, whatif
from .options import output_options


@click.command("whatif")
@click.argument("run", type=click.Path(exists=True))
@click.option("--dp", type=int, default=1, show_default=True)
@click.option("--tp", type=int, default=1, show_default=True)
@click.option("--pp", type=int, default=1, show_default=True)
@click.option("--zero", type=click.IntRange(0, 3), default=0, show_default=True)
@click.option("--sequence-parallel", is_flag=True)
@click.option("--backend", type=click.Choice(["nccl", "gloo"]), default="nccl", show_default=True)
@click.option("--fit", "show_fit", is_flag=True, help="Print the fitted laws instead of the prediction.")
@click.option("--plot", "plot_path", default=None, type=click.Path(dir_okay=False),
              help="Also draw the fitted laws with the measured points to this PNG.")
@output_options
def whatif_cmd(run, dp, tp, pp, zero, sequence_parallel, backend, show_fit, plot_path, fmt, output):
    """The run's model under another plan, timed by the run's own network: per group and collective,
    one step on an average rank: count, bytes, communication time and exposed time. The note column
    says what is extrapolated. Needs a run that recorded its config (tracekit.profiler.record_config).

    \b
    Example:
      tracekit whatif run/ --tp 4 --pp 2 --dp 8 --zero 3
      tracekit whatif run/ --fit
    """
    import pyarrow as pa

    r = api_open(run)
    if plot_path:
        from ..plot import fitted_laws
        fitted_laws(r, plot_path)
    if show_fit:
        emit(pa.Table.from_pylist(fit(r)), fmt, output, title="whatif — fitted laws: latency + traffic / bus bandwidth")
        return
    plan = Plan(dp=dp, tp=tp, pp=pp, zero=zero, sequence_parallel=sequence_parallel, backend=backend)
    emit(whatif(r, plan), fmt, output, title=f"whatif — dp {dp} x tp {tp} x pp {pp}, zero {zero}")
