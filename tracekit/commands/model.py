"""One training step's collectives per rank and process group under a plan (`tracekit model`)."""

from __future__ import annotations

import pyarrow as pa

from ..analytic import Plan, check_fits, predict_stages, total_params
from ..table_meta import NOTE_KEY


def model(preset: str, model_fields: dict, plan: Plan) -> pa.Table:
    """One row per (pipeline stage, group, collective): count and bytes per rank and step; the note says
    the model's parameters and the plan."""
    from ..run_plan import model_with

    shape = model_with(None, preset, model_fields)
    check_fits(shape, plan)
    note = (f"{preset}: {total_params(shape):,} parameters; world {plan.world} = dp {plan.dp} x tp {plan.tp} x pp "
            f"{plan.pp}" + (f" (ep {plan.ep})" if plan.ep > 1 else "") + "; per rank and step:")
    table = pa.Table.from_pylist(predict_stages(shape, plan))
    return table.replace_schema_metadata({**(table.schema.metadata or {}), NOTE_KEY: note.encode()})
