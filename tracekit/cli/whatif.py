from __future__ import annotations

import json

import click

import tracekit

from ..errors import TracekitError
from ..render import emit
from ..whatif import fit, points, whatif
from .options import (
    MODEL_FIELDS,
    PLAN_FIELDS,
    model_options,
    output_options,
    plan_options,
    run_argument,
    split_fields,
)


def read_config(path: str | None) -> dict | None:
    if not path:
        return None
    try:
        with open(path) as f:
            config = json.load(f)
    except ValueError as exc:
        raise TracekitError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(config, dict):
        raise TracekitError(f"{path}: a config is a JSON object {{\"model\": {{...}}, \"plan\": {{...}}}}")
    return config


@click.command("whatif")
@run_argument
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="JSON {model: {...}, plan: {...}} for a run that recorded none (plan optional).")
@model_options(None)
@plan_options({})
@click.option("--world", type=int, default=None, help="plan for this many ranks [default: the run's]")
@click.option("--fit", "show_fit", is_flag=True, help="Print the fitted laws instead of the prediction.")
@click.option("--plot", "plot_path", default=None, type=click.Path(dir_okay=False),
              help="Also draw the fitted laws with the measured points to this PNG.")
@output_options
def whatif_cmd(run, config_file, preset, world, show_fit, plot_path, fmt, output, **kw):
    """The run's model under its own plan or another, timed by the run's own network: per process group
    and collective, one step on the busiest rank: count, bytes, transfer time (the fastest rank of clean
    instances: no waiting) and exposed time (what the step pays), predicted beside measured. The note
    column says what is extrapolated. The plan defaults to the run's (recorded, from --config, or inferred
    from its process groups: stderr says which); plan flags change it (--tp 4 alone: dp takes the rest).

    \b
    Example:
      tracekit whatif examples/traces/ddp
      tracekit whatif run/ --tp 4 --pp 2
      tracekit whatif ../shared/traces/hta_df_index_resolver --preset gpt2-small --dp 2
      tracekit whatif run/ --fit
    """
    import pyarrow as pa

    model = split_fields(kw, MODEL_FIELDS)
    changes = split_fields(kw, PLAN_FIELDS)
    changes["sequence_parallel"] = changes["sequence_parallel"] or None  # the flag absent: unchanged
    r = tracekit.open(run)
    if plot_path or show_fit:
        pts = points(r)
        laws = fit(r, pts)
        if not laws:
            raise TracekitError(f"{run}: no clean matched collective instance with a size to fit a law to; "
                                "see tracekit doctor")
    if plot_path:
        from ..plot import fitted_laws
        fitted_laws(pts, laws, plot_path)
    if show_fit:
        emit(pa.Table.from_pylist(laws), fmt, output, title="whatif — fitted laws: latency + traffic / bus bandwidth")
        return
    try:
        table = whatif(r, config=read_config(config_file), preset=preset, model=model, changes=changes, world=world)
    except TracekitError as exc:
        raise TracekitError(f"{run}: {exc}") from None
    emit(table, fmt, output, title="whatif — per step, busiest rank: predicted beside measured")
