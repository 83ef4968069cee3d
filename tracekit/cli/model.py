from __future__ import annotations

import click
import pyarrow as pa

from ..model import GPTShape, Plan, check_fits, predict_stages, total_params
from ..render import emit
from ..run_plan import model_with
from .options import (
    MODEL_FIELDS,
    model_options,
    output_options,
    plan_options,
    split_fields,
)


@click.command("model")
@model_options("example")
@plan_options({"dp": 1, "tp": 1, "pp": 1, "ep": 1, "zero": 0, "backend": "nccl"})
@output_options
def model_cmd(preset, dp, tp, pp, ep, zero, sequence_parallel, backend, fmt, output, **kw):
    """Predict one training step's collectives per rank and process group (analytic model).

    One row per (pipeline stage, group, collective): count and bytes per rank and step.

    \b
    Example:
      tracekit model --preset gpt3-175b --tp 8 --pp 16 --dp 64
      tracekit model --preset example --dp 2 --zero 3 --backend gloo
      tracekit model --preset example --experts 4 --top-k 2 --dp 2 --ep 2 --backend gloo
    """
    shape: GPTShape = model_with(None, preset, split_fields(kw, MODEL_FIELDS))
    plan = Plan(dp=dp, tp=tp, pp=pp, ep=ep, zero=zero, sequence_parallel=bool(sequence_parallel), backend=backend)
    check_fits(shape, plan)
    rows = predict_stages(shape, plan)
    click.echo(f"{preset}: {total_params(shape):,} parameters; world {plan.world} = dp {dp} x tp {tp} x pp {pp}"
               + (f" (ep {ep})" if ep > 1 else "") + "; per rank and step:", err=True)
    emit(pa.Table.from_pylist(rows), fmt, output)
