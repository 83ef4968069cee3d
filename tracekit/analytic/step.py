"""The step under a plan: each pipeline stage's rank = compute + exposed communication + bubble + waiting.

- compute: the plan's work on the rank (tracekit.analytic.compute) at the rates the measured run shows,
  plus the sharding machinery's own CPU work (given by the caller per stage: tracekit.commands.whatif_step);
- exposed communication: the plan's collectives, timed by the run's network laws, times the share of
  their transfer the run left exposed (given by the caller per stage, with its interval);
- bubble: with pp > 1, a simulation of the plan's schedule (tracekit.analytic.pipeline) from the stages'
  per-micro-batch forward and backward times and one point-to-point transfer; the step's pipeline part
  is its makespan;
- waiting: at collectives other than point-to-point, the share of compute the measured run waited
  (arrival skew grows with the work between collectives); its interval is 0 to twice that.
The interval (lo, hi) adds the ends of each part's interval: compute by the spread of the measured
run's steps (least to largest over median), widened where the plan's work per rank differs from the
run's by more than 1.5x or its ranks share a host's cores differently, and to 1/2-2.5x where tp changes.
Where the plan's ranks share a host's cores differently from the run's (CPU runs), compute, exposed
communication and point-to-point transfers slow alike (a CPU collective is CPU work).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .compute import BACKWARD, Source, micro_batches, rank_work, step_work
from .config import GPTShape, Plan
from .estimate import ZERO, Estimate
from .pipeline import simulate

EXTRAPOLATED_WORK = 0.10  # compute's interval widens by this share where the work per rank changes > 1.5x
CONTENTION = 0.15  # and by this share where its ranks share a host's cores differently
# where tp changes, the GEMMs change shape and layout (sharded, DTensor views): their rate per FLOP is not
# the run's. On the shipped CPU sweep (docs/model.md) predictions across a change of tp ranged 0.39x to
# 1.92x of the measured step, so compute's interval spans 1/2 to 2.5x there
TP_CHANGE = (0.5, 2.5)
# What an interval of a plan the run did not measure means: 80 % of such predictions hold the plan's measured
# step. The parts' ends added (below) were too wide where the parts are uncertain (across tp: hi/lo up to 86)
# and too tight where they are not (a pipeline from a pipeline: hi/lo 1.02, missing by 10 %): the interval is
# the parts' one narrowed to this power of its ends' ratios to the point, and at least this share either way.
# Fitted to the three shipped sweeps (examples/traces/sweep, sweep-small and sweep-pp, each plan predicted from
# each other: 210 predictions, docs/model.md "Intervals"): 176 hold the measured step (84 %), 99 of the 122
# narrower than 1.5x (81 %); with (0.4, 0.2), fitted before sweep-small and sweep-pp were recorded on a quiet
# machine, 207 (99 %) and 96 of 99: too wide to choose by
CALIBRATED = (0.25, 0.11)


def calibrated(est: Estimate) -> Estimate:
    """The estimate of a plan the run did not measure, its interval calibrated (CALIBRATED): its ends'
    ratios to the point to the power k, and at least (1 + f) either way."""
    k, f = CALIBRATED
    ms, lo, hi = est.value, est.lo, est.hi
    lo = ms * (min(lo, ms) / ms) ** k if ms > 0 else lo
    hi = ms * (max(hi, ms) / ms) ** k if ms > 0 else hi
    return Estimate(ms, min(lo, ms / (1 + f)), max(hi, ms * (1 + f)))


@dataclass
class StagePrediction:
    stage: int
    step: Estimate
    compute: Estimate
    exposed: Estimate
    bubble: Estimate
    wait: Estimate
    notes: list[str] = field(default_factory=list)


def predict_step(m: GPTShape, plan: Plan, src: Source, exposed: list[Estimate], p2p: Estimate | None = None,
                 contention: float = 1.0, framework: list[Estimate] | None = None,
                 xfer: list[Estimate] | None = None) -> list[StagePrediction]:
    """Per pipeline stage, its rank's predicted step. ``exposed[s]``: stage s's exposed communication
    other than point-to-point, ms; ``p2p``: one activation transfer between stages, ms (pp > 1), a lag;
    ``xfer[s]``: what each point-to-point op holds stage s, ms, at the measured run's contention (where
    the run measured its pipeline's transfers: tracekit.analytic.pipeline);
    ``framework[s]``: the sharding machinery's own CPU work on stage s per step at the measured run's
    contention, ms (part of compute, outside the pipeline's passes)."""
    slow = contention / src.contention
    notes = []
    widen = 0.0
    work = [src.rates.time(rank_work(m, plan, s)) for s in range(plan.pp)]
    mean_work = sum(work) / len(work)
    if src.work_per_rank > 0 and not 1 / 1.5 <= mean_work / src.work_per_rank <= 1.5:
        widen += EXTRAPOLATED_WORK
        notes.append(f"compute extrapolated: {mean_work / src.work_per_rank:.2g}x the measured run's work per rank")
    if slow != 1:
        widen += CONTENTION
        notes.append(f"ranks share the host's cores {slow:.2g}x as much as in the measured run: compute x{slow:.2g}")
    spread = src.step_spread.widen(1 + widen)
    lo_k, hi_k = spread.lo, spread.hi
    if plan.tp != src.tp:
        lo_k, hi_k = lo_k * TP_CHANGE[0], hi_k * TP_CHANGE[1]
        notes.append(f"compute's interval {TP_CHANGE[0]:g}-{TP_CHANGE[1]:g}x: tp {src.tp} -> {plan.tp} changes the "
                     "GEMMs' shapes, whose rate the run did not measure")
    if slow != 1:  # a CPU collective is CPU work (Gloo reduces on the CPU, its ranks poll): it slows alike
        exposed = [e.scale(slow) for e in exposed]
        p2p = p2p.scale(slow) if p2p else None
    xfer = [x.scale(slow) for x in xfer] if xfer else None
    mbs = micro_batches(m, plan)
    framework = framework or [ZERO] * plan.pp
    per_mb, opt = [], []
    same_stages = len(src.stage_k) == plan.pp  # each stage keeps what its measured compute exceeds its work by
    for s in range(plan.pp):
        mb, o = step_work(m, plan, s)
        k = slow * (src.stage_k[s] if same_stages else 1.0)
        per_mb.append(src.rates.time(mb) * k)
        opt.append(src.rates.time(o) * k)
    out = []

    def compute(s: int) -> Estimate:
        c = per_mb[s] * mbs + opt[s]
        f = framework[s]
        return Estimate(c + f.value * slow, c * lo_k + f.lo * slow * lo_k, c * hi_k + f.hi * slow * hi_k)

    if plan.pp == 1:
        comp = compute(0)
        c = comp.value
        wait = Estimate(c * src.wait_share, 0.0, 2 * c * src.wait_share)
        step = comp + exposed[0] + wait
        return [StagePrediction(0, step, comp, exposed[0], ZERO, wait, notes)]
    p2p = p2p or ZERO
    sims = {}
    for key, k, t in (("value", 1.0, p2p.value), ("lo", lo_k, p2p.lo), ("hi", hi_k, p2p.hi)):
        f = [x * k / (1 + BACKWARD) for x in per_mb]
        b = [x * k * BACKWARD / (1 + BACKWARD) for x in per_mb]
        x = [getattr(e, key) for e in xfer] if xfer else None
        sims[key] = simulate(f, b, mbs, schedule=plan.schedule, chunks=plan.chunks, p2p=t, xfer=x)
    notes.append(f"bubble: {plan.schedule} simulated over {mbs} micro-batches "
                 f"(backward {BACKWARD:.0f}x forward, from the FLOP ratio)")
    if xfer:
        notes.append("point-to-point: each op holds its stage as long as the run's own did (its exposed transfer)")
    for s in range(plan.pp):
        comp = compute(s)
        c = comp.value
        wait = Estimate(c * src.wait_share, 0.0, 2 * c * src.wait_share)
        bubble = Estimate(*(sims[key].makespan - sims[key].busy[s] for key in ("value", "lo", "hi")))
        bubble = Estimate(bubble.value, min(bubble.lo, bubble.hi), max(bubble.lo, bubble.hi))
        step = comp + bubble + exposed[s] + wait
        out.append(StagePrediction(s, step, comp, exposed[s], bubble, wait, notes))
    return out
