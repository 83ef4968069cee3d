"""`tracekit whatif RUN [--tp 4 ...]`: a run's measured network, fitted, applied to its own or another plan.

1. Fit, per collective and role of group (DP/TP/PP: recorded config, group description, or the plan's
   group sizes), the transfer time of the clean matched instances (the fastest rank's duration, so waiting
   is out; sql/reports/_whatif_points.sql) as latency + bus traffic / bus bandwidth, where bus traffic =
   message bytes x nccl-tests' bus factor for the group's size. One law per (collective, role).
2. Predict with tracekit.analytic the collectives of one step of each pipeline stage under the plan (default:
   the run's own), and time them with the law; report the busiest rank (most bytes) per group and
   collective, beside what the run measured on its own busiest rank (sql/reports/_whatif_measured.sql).
3. Exposed (what the step pays): the transfer time x the share of that collective's kernel time the run
   left exposed (its role's, else the run's, where the run never ran it).

The note column says every extrapolation: a message size or group size outside the measured range, a
collective timed from another collective's bus bandwidth on the same role of group, a role never seen.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import pyarrow as pa

from ..analytic.estimate import columns
from ..errors import TracekitError
from ..table_meta import FIRST_KEY, KEY_KEY, NOTE_KEY
from ..words import plural

# fit and points: the laws' two steps, this command's public names (api.fit_laws and tests read them here)
from .whatif_model import context, fit, points, predicted_rows, rows_table, stage_collectives  # noqa: F401


def whatif(run, plan=None, *, config: dict | None = None, preset: str | None = None, model: dict | None = None,
           changes: dict | None = None, world: int | None = None, cores: int | None = None,
           sweep: bool = False) -> pa.Table:
    """The step under a plan, first, then per group and collective on the busiest rank: predicted count,
    bytes, transfer and exposed time, beside the run's own (measured_* for its own plan and model; source_*
    for another plan or model, whose figures nobody measured). The plan: ``plan``, else the run's own
    (recorded, ``config``'s, or inferred) with ``changes`` (dp, tp, pp, zero, sequence_parallel, backend,
    schedule) over it. The model: ``preset``, else the recorded or ``config``'s, with ``model`` (field ->
    value) over it; the run's rates are the recorded or ``config``'s model's, so a preset is another model
    as ``model`` is (whatif_model.context), the run's own only where the run says none. ``world``: the
    number of ranks the plan is for (default: the run's). ``cores``: CPU runs, the cores a host's ranks
    share (default: a processor per rank, as GPUs). ``sweep``: every valid plan for ``world`` ranks, ranked
    by predicted step, instead."""
    from ..analytic import check_fits
    from ..run_plan import plan_with
    from . import whatif_step as ws

    ctx = context(run, config, preset, model, cores)
    rp = ctx.rp
    if rp.shape is None:
        raise TracekitError("the traces record no model: pass --config FILE (JSON: {\"model\": {...}, "
                            "\"plan\": {...}}) or --preset NAME (with --layers/--hidden/--heads/--seq/--micro-batch/"
                            "--dtype to override)")
    world = world or rp.world
    changes = dict(changes or {})
    schedule = changes.pop("schedule", None)
    target = plan or plan_with(rp.plan, world, changes, rp.shape)
    if target is None:
        raise TracekitError(rp.source)
    if rp.plan is None:  # the run's own plan unknown: the one given stands for it (which groups are which)
        rp.plan, rp.source = target, "plan as given (the trace does not tell its own)"
    if plan is None and target is not rp.plan:
        target = dataclasses.replace(target, schedule=schedule or rp.plan.schedule, chunks=rp.plan.chunks)
    elif schedule:
        target = dataclasses.replace(target, schedule=schedule)
    asked = [] if plan is not None or sweep else _flags(changes, schedule, world if world != rp.world else None)
    where = rp.source + (f", with {' '.join(asked)} over it" if asked else "")
    if not asked and rp.model_source.replace("model from ", "plan from ", 1) == rp.source:  # one source for both
        where = rp.source.replace("plan from ", "model and plan from ", 1)
    elif rp.model_source:
        where = f"{rp.model_source}; {where}"
    laws_at = f"times from the network laws and compute measured in {run.name}"
    if sweep:
        runs = ws.global_batch(rp.shape, rp.plan)
        if runs * world % rp.world:
            step = rp.world // math.gcd(runs, rp.world)
            raise TracekitError(f"--world {world}: the run's {runs} sequences a step on {rp.world} ranks are "
                                f"{runs * world / rp.world:g} on {world}, not a whole number; the sweep holds the "
                                f"run's batch: give a --world that keeps it whole (a multiple of {step})")
        rows = ws.sweep(ctx, world)
        batch = runs * world // rp.world
        if not rows:
            raise TracekitError(f"no plan for {plural(world, 'rank', 'ranks')} trains the run's {batch} sequences a "
                                "step in whole micro-batches the model allows")
        note = (f"{where}; {laws_at}; every plan for {plural(world, 'rank', 'ranks')} at {batch} sequences per "
                f"step, ranked by predicted step; versus_best: {ws.NOT_SEPARABLE} where its interval overlaps the "
                "best's")
        rows = [{**r, **columns(r["step"], "step_ms")} for r in rows]
        return pa.Table.from_pylist(rows, schema=SWEEP_SCHEMA).replace_schema_metadata(
            {NOTE_KEY: note.encode(),
             FIRST_KEY: b"place,plan,step_ms,micro_batch,micro_batches,step_ms_lo,step_ms_hi,versus_best,basis",
             KEY_KEY: b"plan"})  # plans that differ only past a cut ('zero 1', 'zero 3') must not look alike
    check_fits(rp.shape, target, world, asked=world != rp.world)
    colls = stage_collectives(ctx, target)
    st = ws.step(ctx, target, colls)
    own = ws.same_plan(target, rp.plan) and world == rp.world and ctx.src_shape == rp.shape
    first = {"group": f"step (stage {st.get('stage', 0)})" if target.pp > 1 else "step", "collective": None,
             **columns(st["step"], "step_ms"),
             "measured_step_ms": ctx.meas.step_ms,
             "exposed_ms": st.get("exposed_ms"), "note": _step_note(st, run.name)}
    rows = [first] + predicted_rows(ctx, target, colls)
    table = rows_table(rows, source=not own)
    note = (f"{where}; {laws_at}; predicted: {ws.describe(target)}{_zero_said(rp.plan, target, changes)}"
            f"{_batch_said(ctx, target, world)}")
    m = "measured" if own else "source"
    firsts = (f"group,collective,step_ms,step_ms_lo,step_ms_hi,{m}_step_ms,count,transfer_ms,exposed_ms,"
              f"{m}_exposed_ms,note")
    return table.replace_schema_metadata({NOTE_KEY: note.encode(), FIRST_KEY: firsts.encode()})


SWEEP_SCHEMA = pa.schema([("place", pa.int64()), ("plan", pa.string()), ("micro_batch", pa.int64()),
                          ("micro_batches", pa.int64()),
                          ("step_ms", pa.float64()), ("step_ms_lo", pa.float64()), ("step_ms_hi", pa.float64()),
                          ("compute_ms", pa.float64()), ("exposed_ms", pa.float64()), ("bubble_ms", pa.float64()),
                          ("wait_ms", pa.float64()), ("versus_best", pa.string()), ("basis", pa.string())])


def _flags(changes: dict, schedule: str | None, world: int | None) -> list[str]:
    """The plan flags given, as typed (for the header: the plan is the run's with these over it)."""
    out = []
    for k, v in changes.items():
        if v is None:
            continue
        name = k.replace("_", "-")
        out.append((f"--{name}" if v else f"--no-{name}") if isinstance(v, bool) else f"--{name} {v}")
    return out + ([f"--schedule {schedule}"] if schedule else []) + ([f"--world {world}"] if world else [])


def _zero_said(own, target, changes: dict) -> str:
    """"; ZeRO N dropped at dp 1 ..." where the plan predicted has one data-parallel replica and the run's
    ZeRO stage, or the one asked for, was more than 0 (run_plan.plan_with drops it: nothing to shard)."""
    asked = changes.get("zero")
    stage = asked if asked else (own.zero if own is not None and changes else 0)
    if target.dp != 1 or target.zero or not stage:
        return ""
    whose = f"--zero {asked}" if asked else f"the run's zero {stage}"
    return f"; {whose} dropped at dp 1 (one replica has nothing to shard)"


def _batch_said(ctx, target, world: int) -> str:
    """"; N sequences a step ... where the run's plan takes M" when the plan predicted does not train the run's
    batch per step (scaled to ``world``): a plan flag keeps the micro-batch, so another dp (or pp's micro-batch
    count) is another amount of work a step, and its step no saving on the run's (the sweep holds the batch);
    with the micro-batch size that would hold it, where a whole one does. "" where it is the same."""
    from . import whatif_step as ws

    rp = ctx.rp
    runs = ws.global_batch(ctx.src_shape, rp.plan)
    held = Fraction(runs * world, rp.world)  # the run's batch scaled to the world asked: whole or not
    got = ws.global_batch(rp.shape, target)
    if got == held:
        return ""
    per = target.dp * (rp.shape.micro_batches if target.pp > 1 else 1)
    hint = (f"--micro-batch {int(held) // per} trains the run's" if held.denominator == 1 and held % per == 0
            and held >= per else "no whole micro-batch trains the run's at this plan")
    split = f" x {rp.shape.micro_batches} micro-batches" if target.pp > 1 else ""
    run = (f"the run's {runs} on {rp.world} ranks are {float(held):g} on {world}"
           if world != rp.world else f"the run trains {runs}")
    return (f"; {got} sequences a step (micro-batch {rp.shape.micro_batch}{split} x dp {target.dp}) where {run}: "
            f"not the same work a step ({hint})")


def _step_note(st: dict, run_name: str) -> str:
    if st["step"] is None:
        return f"no step: {st['basis']}"
    parts = (f"compute {st['compute_ms']:.3g} + exposed {st['exposed_ms']:.3g} + bubble {st['bubble_ms']:.3g} "
             f"+ waiting {st['wait_ms']:.3g} ms")
    return f"{parts}, rescaled from {run_name}'s measured step; {st['basis']}"
