from __future__ import annotations

import click

import tracekit

from .options import emit, model_options, output_options, plan_options


@click.command("model")
@model_options("example")
@plan_options({"dp": 1, "tp": 1, "pp": 1, "ep": 1, "zero": 0, "backend": "nccl"}, exclude=("schedule",))
@output_options
def model_cmd(fmt, output, **params):
    """Predict one training step's collectives per rank and process group (analytic model).

    One row per (pipeline stage, group, collective): count and bytes per rank and step.

    \b
    Example:
      tracekit model --preset gpt3-175b --tp 8 --pp 16 --dp 64
      tracekit model --preset example --dp 2 --zero 3 --backend gloo
      tracekit model --preset example --experts 4 --top-k 2 --dp 2 --ep 2 --backend gloo
    """
    emit(tracekit.model(**params), fmt, output)
