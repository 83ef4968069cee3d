from __future__ import annotations

import click

import tracekit

from .options import emit, model_options, output_options, plan_options, run_argument


@click.command("whatif")
@run_argument
@click.option("--config", "config", type=click.Path(exists=True, dir_okay=False), default=None,
              help="JSON {model: {...}, plan: {...}} for a run that recorded none (plan optional).")
@model_options(None)
@plan_options({})
@click.option("--world", type=int, default=None, help="plan for this many ranks, at least 1 [default: the run's]")
@click.option("--sweep", is_flag=True, help="Every valid plan for the world size, ranked by predicted step.")
@click.option("--cores", type=int, default=None,
              help="CPU runs: cores a host's ranks share, at least 1 [default: a processor per rank, as GPUs]")
@click.option("--fit", "fit", is_flag=True, help="Print the fitted laws instead of the prediction.")
@click.option("--plot", "plot", default=None, type=click.Path(dir_okay=False),
              help="Also draw the fitted laws with the measured points to this PNG.")
@click.option("--fix-rank", "fix_ranks", type=int, multiple=True,
              help="Counterfactual replay: this rank at the median rank's pace (repeatable).")
@click.option("--comm-speedup", type=float, default=None,
              help="Counterfactual replay: every transfer X times faster (at least 0.001: 1000x slower).")
@click.option("--overlap", "overlap", multiple=True, metavar="GROUP",
              help="Counterfactual replay: this group's collectives (a pg_name, or a role: DP, TP, PP, EP) "
                   "hidden behind compute (repeatable).")
@output_options
def whatif_cmd(run, fmt, output, fit, fix_ranks, comm_speedup, overlap, **params):
    """The run's model under its own plan or another, timed by the run's own compute and network: first the
    step (compute + exposed communication + pipeline bubble + waiting, with its interval step_ms_lo to
    step_ms_hi), then per process group and collective, one step on the busiest rank: count, bytes,
    transfer time (alpha + bytes / beta, fitted to the run's clean instances) and exposed time. Beside
    them the run's own figures: measured_* for its own plan and model, source_* for another plan or model
    (the run's, not the prediction's). The note column says where each law was measured and what is
    extrapolated. The plan defaults to the run's (recorded, from --config, or inferred from its process
    groups: stderr says which); plan flags change it (--tp 4 alone: dp takes the rest). The model
    defaults to the run's (recorded, or from --config); --preset NAME and model flags (--hidden, --layers,
    ...) ask for another, its compute the run's rates times its work ('compute extrapolated' in the note).
    Only on a run that records no model does --preset stand for the run's own (the note says so). The
    interval of a plan the run did not measure is calibrated: 80 % of them hold the measured step
    (docs/model.md, "Intervals"). --fix-rank, --comm-speedup and --overlap instead replay the run's own
    dependency graph with that cause changed: each rank's step measured, replayed and predicted.

    \b
    Example:
      tracekit whatif examples/traces/ddp
      tracekit whatif run/ --tp 4 --pp 2
      tracekit whatif examples/traces/ddp --preset gpt2-small --dp 2
      tracekit whatif run/ --fit
      tracekit whatif run/ --sweep --world 8
      tracekit whatif run/ --fix-rank 1          (a replay of the run's own dependencies: each rank's step)
      tracekit whatif run/ --comm-speedup 2 --overlap DP
    """
    if fix_ranks or comm_speedup is not None or overlap:  # a counterfactual replay (graph/counterfactual.py)
        _refuse_a_plan_with_a_replay(fit, params)
        emit(tracekit.counterfactual(run, fix_ranks=fix_ranks, comm_speedup=comm_speedup, overlap=overlap),
             fmt, output, title="whatif — counterfactual replay: each rank's step, predicted beside measured")
        return
    plot = params.pop("plot")
    for flag, value, what in (("--world", params["world"], "the number of ranks the plan is for"),
                              ("--cores", params["cores"], "the cores a host's ranks share")):
        if value is not None and value < 1:
            raise tracekit.TracekitError(f"{flag} {value}: give {what}, at least 1")
    if params.get("sweep"):  # the sweep tries every plan: a plan flag beside it would be dropped without a word
        from ..analytic.config import PLAN_FIELDS
        from ..api import SWEPT_MODEL_FIELDS

        given = [f.spelled(params[f.name]) for f in PLAN_FIELDS if params.get(f.name) is not None]
        given += [f"--{n.replace('_', '-')} {params[n]}" for n in SWEPT_MODEL_FIELDS if params.get(n) is not None]
        if given:
            raise tracekit.TracekitError(f"{', '.join(given)} with --sweep: the sweep tries every plan for the "
                                         "world size (--world), with every micro-batch count; give the "
                                         "plan without --sweep to predict it alone")
    if fit or plot:
        laws = tracekit.fit_laws(run, plot)
        if fit:
            emit(laws, fmt, output, title="whatif — fitted laws: latency + traffic / bus bandwidth")
            return
    table = tracekit.predict_plan(run, params.pop("config"), **params)
    if params.get("sweep"):
        emit(table, fmt, output, title="whatif — every plan, ranked by predicted step")
    else:
        emit(table, fmt, output, title="whatif — per step, busiest rank: predicted beside measured")


def _refuse_a_plan_with_a_replay(fit: bool, params: dict) -> None:
    """A counterfactual replays the run's own plan: a plan or model flag beside it is refused, by its flag."""
    from ..analytic.config import PLAN_FIELDS

    plan = {f.name: f for f in PLAN_FIELDS}
    given = [plan[k].spelled(v) if k in plan else "--" + k.replace("_", "-")
             for k, v in {"fit": fit or None, **params, "sweep": params.get("sweep") or None}.items() if v is not None]
    if given:
        raise tracekit.TracekitError(
            f"{', '.join(g.split(' ')[0] for g in given)} with --fix-rank/--comm-speedup/--overlap: a counterfactual "
            "replays the run's own plan; give the plan or model flags in a whatif of their own")
