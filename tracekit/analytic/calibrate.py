"""What a measured run tells the step model: compute rates, waiting share, step spread (tracekit.analytic.step).

Each rank's profiled steps (sql/reports/_whatif_parts.sql) are split into compute (GEMM, attention, the
rest), exposed transfer and waiting; the rates are each kind's measured time over the work the run's own
plan gives that rank (tracekit.analytic.compute). The measured step, per profiled step, is the longest
ProfilerStep over the ranks (the job waits for its slowest rank); the run's step is their median.
"""

from __future__ import annotations

from .compute import FRAMEWORK, Source, calibrate, machinery, micro_batches, rank_work
from .config import GPTShape, Plan
from .estimate import Estimate
from .measured import Measured
from .pipeline import model_chunks


def contention(ranks_per_host: int, cores: int | None, busy: float = 1.0) -> float:
    """How much slower compute runs where a host's ranks share ``cores`` (CPU runs; 1 without): their
    demand (ranks x the share of the step each keeps a core busy: computing, or in a Gloo collective,
    which reduces on the CPU and polls while it waits, and both where they overlap; a pipeline's bubble
    leaves the core to the others) over the cores, at least 1."""
    return max(1.0, ranks_per_host * busy / cores) if cores else 1.0


def source(m: GPTShape, plan: Plan, meas: Measured, cores: int | None = None) -> Source | None:
    """The measured run's rates and shares; None where it has no profiled step to calibrate from.

    The work of the sharding machinery the run's plan runs (FRAMEWORK, machinery) is kept out of the rates:
    per step, the least over the ranks is the machinery's own (Source.framework); what a rank spends in it
    beyond that is waiting (a rank blocked inside FSDP's hook on an all-gather its peer joins late). Such
    records on a plan without the machinery (FSDP2's parameters are DTensors: the optimizer's dispatch
    around them) stay in the rates."""
    rows = []
    for r in meas.parts:
        n = r["steps"] or 0
        if n:
            rows.append((r, n))
    carried = [mech for mech in FRAMEWORK if mech in machinery(plan)]

    def own_ms(r, n, mech):  # the machinery's compute on a rank per step, ms
        return r.get(f"{mech}_ns", 0) / n / 1e6

    least = {mech: min((own_ms(r, n, mech) for r, n in rows), default=0.0) for mech in carried}
    cal, works, comp, wait, window, idle, hidden = [], [], 0.0, 0.0, 0.0, 0.0, 0.0
    per_rank = plan.dp * plan.tp
    p2p_ms: list[list[float]] = [[] for _ in range(plan.pp)]  # per stage, per rank: ms per point-to-point op
    stage_ms: list[list[float]] = [[] for _ in range(plan.pp)]  # per stage, per rank: its compute, ms
    for r, n in rows:
        stage = min(r["rank"] // per_rank, plan.pp - 1)
        w = rank_work(m, plan, stage)
        if plan.pp > 1:
            p2p_ms[stage].append(r["p2p_comm_ns"] / n / 1e6 / p2p_ops(m, plan, stage))
        c = r["compute_ns"] / n / 1e6
        g, a = r["gemm_ns"] / n / 1e6, r["attention_ns"] / n / 1e6
        rest = max(c - g - a, 0.0)
        excess = 0.0  # what the rank spent in the machinery beyond the least rank's: waiting, not compute
        for mech in carried:  # the machinery's work: per collective it issues, not per element
            own = min(own_ms(r, n, mech), rest)  # (tracekit.analytic.step)
            rest -= own
            excess += max(own - least[mech], 0.0)
        wait += excess
        cal.append((w, g, a, rest))
        works.append(w)
        comp += c - excess  # the waiting share is of the compute the plan rescales (which leaves it out)
        stage_ms[stage].append(g + a + rest)
        wait += r["wait_ns"] / n / 1e6
        window += r["window_ns"] / n / 1e6
        idle += (r["p2p_wait_ns"] + r["p2p_comm_ns"]) / n / 1e6
        hidden += r["hidden_ns"] / n / 1e6
    if not cal or comp <= 0:
        return None
    rates = calibrate(cal)
    k = 1.0
    if meas.step_ms and meas.steps_ms:  # the median step, not the mean: a burst of load in one step is left out
        k = meas.step_ms / (sum(meas.steps_ms) / len(meas.steps_ms))
        rates = type(rates)(rates.gemm * k, rates.attention * k, rates.elementwise * k)
    spread = [s / meas.step_ms for s in meas.steps_ms] if meas.step_ms else [1.0]
    p2p = tuple(k * sum(v) / len(v) if v else 0.0 for v in p2p_ms) if plan.pp > 1 else ()
    stage_k = ()
    if plan.pp > 1:  # each stage's measured compute over what the rates give its work: a stage slower than its
        # work (a rank asleep, a straggler) keeps its excess under a plan with the same stages
        stage_k = tuple(k * sum(v) / len(v) / t if v and (t := rates.time(rank_work(m, plan, s))) > 0 else 1.0
                        for s, v in enumerate(stage_ms))
    mean_work = sum(rates.time(w) for w in works) / len(works)
    return Source(rates, wait / comp, Estimate(1.0, min(min(spread), 1.0), max(max(spread), 1.0)), mean_work,
                  contention(meas.ranks_per_host, cores, busy_share(window, idle, hidden)), plan.tp,
                  {mech: v * k for mech, v in least.items()}, p2p, stage_k)


def p2p_ops(m: GPTShape, plan: Plan, stage: int) -> int:
    """Point-to-point ops per step on a rank of ``stage``: per micro-batch, each of its virtual stages
    (chunks with the interleaved schedule) receives and sends the forward's activation and the backward's
    gradient, but the first takes no input and the last sends none on."""
    mbs, chunks = micro_batches(m, plan), model_chunks(plan.schedule, plan.chunks)
    last = plan.pp * chunks - 1
    return sum(2 * mbs * ((v > 0) + (v < last)) for v in (c * plan.pp + stage for c in range(chunks)))


def busy_share(window: float, idle: float, hidden: float) -> float:
    """The cores a rank keeps busy, as a share of its step: all of it but a pipeline's bubble (point-to-point
    waits and transfers), plus the communication it overlaps with compute (a Gloo collective reduces on
    the CPU and polls beside the compute thread: two cores' work at once)."""
    return (1 - idle / window + hidden / window) if window > 0 else 1.0


