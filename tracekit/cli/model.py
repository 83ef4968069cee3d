from __future__ import annotations

import click
import pyarrow as pa

from ..model import PRESETS, GPTShape, Plan, predict_rank, total_params
from ..render import emit
from .options import output_options

_SHAPE = ("layers", "hidden", "heads", "vocab", "seq", "micro_batch", "micro_batches")


@click.command("model")
@click.option("--preset", type=click.Choice(sorted(PRESETS)), default="example", show_default=True)
@click.option("--layers", type=int, help="override the preset")
@click.option("--hidden", type=int)
@click.option("--heads", type=int)
@click.option("--vocab", type=int)
@click.option("--seq", type=int)
@click.option("--micro-batch", type=int)
@click.option("--micro-batches", type=int)
@click.option("--dtype", default=None)
@click.option("--dp", type=int, default=1, show_default=True)
@click.option("--tp", type=int, default=1, show_default=True)
@click.option("--pp", type=int, default=1, show_default=True)
@click.option("--zero", type=click.IntRange(0, 3), default=0, show_default=True,
              help="0 DDP, 1 ZeRO-1, 2 FSDP without reshard, 3 FSDP/ZeRO-3")
@click.option("--sequence-parallel", is_flag=True)
@click.option("--backend", type=click.Choice(["nccl", "gloo"]), default="nccl", show_default=True)
@output_options
def model_cmd(preset, dp, tp, pp, zero, sequence_parallel, backend, fmt, output, dtype, **dims):
    """Predict one training step's collectives per rank and process group (analytic model).

    One row per (pipeline stage, group, collective): count and bytes per rank and step.

    \b
    Example:
      tracekit model --preset gpt3-175b --tp 8 --pp 16 --dp 64
      tracekit model --preset example --dp 2 --zero 3 --backend gloo
    """
    values = dict(PRESETS[preset])
    values.update({k: v for k, v in dims.items() if v is not None})
    if dtype:
        values["dtype"] = dtype
    shape = GPTShape(**values)
    plan = Plan(dp=dp, tp=tp, pp=pp, zero=zero, sequence_parallel=sequence_parallel, backend=backend)
    # pipeline stages differ only as first, middle and last: one representative rank of each
    stages = {"all": 0} if pp == 1 else {"first": 0, **({"middle": 1} if pp > 2 else {}), "last": pp - 1}
    rows = []
    for label, stage in stages.items():
        for e in predict_rank(shape, plan, stage * dp * tp):
            rows.append({"stage": label, "group": e.group, "collective": e.collective, "count": e.count,
                         "bytes_per_step": e.bytes, "gb_per_step": e.bytes / 1e9, "what": e.why})
    click.echo(f"{preset}: {total_params(shape):,} parameters; world {plan.world} = dp {dp} x tp {tp} x pp {pp}; "
               f"per rank and step:", err=True)
    emit(pa.Table.from_pylist(rows), fmt, output)
