"""The work of one rank under a plan, and its time from rates the measured run calibrates.

Per micro-batch on a rank of a pipeline stage (the GPT of tracekit.analytic.config; forward, and twice it
backward: the FLOP ratio of a linear layer's two gradients to its output):
- GEMM FLOPs: 2 x tokens x 12 C^2 / tp per layer (q, k, v, proj, fc, fc_out: Megatron shards them all), the
  LM head's 2 x tokens x C x V (sharded by tp only with sequence parallelism, as the examples' GPT does);
- attention FLOPs: 2 x 2 x b x T^2 x C / tp per layer (scores and their weighted sum);
- elementwise elements: per layer tokens x C x (4 / s + 8 / tp), s = tp with sequence parallelism else 1
  (norms and residuals on the full or sequence-sharded width; q, k, v, attention output and the 4C
  activation on the sharded one), the embeddings' tokens x C on the first stage, the logits' tokens x V on
  the last.
Per step, the optimizer touches each parameter of the rank (ZeRO-1 and up: its 1/dp share) three times.
A rate per kind (ms per FLOP, ms per element) comes from the measured run (tracekit.commands.whatif: its
GEMM, attention and other compute time over the same work under its own plan) and times the plan's work.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .config import GPTShape, Plan, rank_params, stage_layers
from .estimate import Estimate

BACKWARD = 2.0  # backward work / forward work
OPTIMIZER_TOUCHES = 3  # elements an SGD step reads and writes per parameter (grad, param in, param out)


@dataclass(frozen=True)
class Work:
    gemm: float
    """GEMM FLOPs"""
    attention: float
    """attention FLOPs"""
    elementwise: float
    """elements touched by elementwise ops"""

    def __add__(self, o: "Work") -> "Work":
        return Work(self.gemm + o.gemm, self.attention + o.attention, self.elementwise + o.elementwise)

    def scale(self, k: float) -> "Work":
        return Work(self.gemm * k, self.attention * k, self.elementwise * k)


def micro_batches(m: GPTShape, plan: Plan) -> int:
    """Micro-batches per step: the model's with pipelining, else one (data parallel steps use one)."""
    return m.micro_batches if plan.pp > 1 else 1


def forward_work(m: GPTShape, plan: Plan, stage: int) -> Work:
    """One micro-batch's forward on a rank of ``stage``."""
    b, T, C, V, t = m.micro_batch, m.seq, m.hidden, m.vocab, plan.tp
    tokens = b * T
    s = t if plan.sequence_parallel else 1
    layers = len(stage_layers(m, plan, stage))
    gemm = layers * 2 * tokens * 12 * C * C / t
    attention = layers * 4 * b * T * T * C / t
    elem = layers * tokens * C * (4 / s + 8 / t)
    if stage == 0:
        elem += tokens * C
    if stage == plan.pp - 1:
        gemm += 2 * tokens * C * V / s
        elem += tokens * V
    return Work(gemm, attention, elem)


def step_work(m: GPTShape, plan: Plan, stage: int) -> tuple[Work, Work]:
    """(per micro-batch forward + backward, per step optimizer) on a rank of ``stage``."""
    mb = forward_work(m, plan, stage).scale(1 + BACKWARD)
    params = sum(p.numel for p in rank_params(m, plan, stage))
    if plan.zero >= 1:
        params /= plan.dp
    return mb, Work(0.0, 0.0, OPTIMIZER_TOUCHES * params)


def rank_work(m: GPTShape, plan: Plan, stage: int) -> Work:
    """All of one step's work on a rank of ``stage``."""
    mb, opt = step_work(m, plan, stage)
    return mb.scale(micro_batches(m, plan)) + opt


@dataclass(frozen=True)
class Rates:
    gemm: float
    """ms per GEMM FLOP"""
    attention: float
    """ms per attention FLOP"""
    elementwise: float
    """ms per element"""

    def time(self, w: Work) -> float:
        return self.gemm * w.gemm + self.attention * w.attention + self.elementwise * w.elementwise


def calibrate(measured: list[tuple[Work, float, float, float]]) -> Rates:
    """Rates from ranks' (work, GEMM ms, attention ms, other compute ms): each kind's time over its work,
    summed over the ranks. A kind the run never timed apart (attention inside other compute, say) takes
    the GEMM rate."""
    def rate(i):
        work = sum((w.gemm, w.attention, w.elementwise)[i] for w, *_ in measured)
        ms = sum(r[1 + i] for r in measured)
        return ms / work if work > 0 and ms > 0 else None
    g, a, e = rate(0), rate(1), rate(2)
    g = g if g is not None else (e or 0.0)
    return Rates(g, a if a is not None else g, e if e is not None else 0.0)


@dataclass
class Source:
    """What the measured run gives a prediction: its rates, its waiting share, the spread of its steps,
    its work per rank, and how many ranks shared a host's cores."""
    rates: Rates
    wait_share: float
    step_spread: Estimate = Estimate(1.0, 1.0, 1.0)  # the measured steps over their median: 1, the least, the
    # largest
    work_per_rank: float = 0.0  # mean over ranks of rank_work's total (FLOP-weighted by the rates, ms)
    contention: float = 1.0  # ranks per core on the busiest host (1: a processor each, as GPUs)
    tp: int = 1  # the run's tensor-parallel degree
    framework: dict = field(default_factory=dict)  # FRAMEWORK's machinery the run's plan runs -> its own work
    # per step, ms (the least rank's; CPU-only ranks, 0 elsewhere), kept out of the rates
    p2p_op: tuple = ()  # pipelined runs: per stage of the run's plan, what one point-to-point op (a send, a
    # receive) held its ranks, ms: their exposed transfer at send/recv per op (tracekit.analytic.pipeline)
    stage_k: tuple = ()  # pipelined runs: per stage of the run's plan, its ranks' measured compute over what
    # the rates give their work (1: the stage runs as its work says; a rank asleep or slowed reads above 1)


FRAMEWORK = ("fsdp", "dtensor")  # sharding machinery whose own CPU work the trace records apart
# (sql/reports/_whatif_parts.sql): FSDP's hooks and copies, DTensor's redistributions and dispatch


def machinery(plan: Plan) -> set[str]:
    """The FRAMEWORK machinery ``plan`` runs: FSDP with ZeRO-2/3 over dp > 1, DTensor with tp > 1."""
    out = set()
    if plan.zero >= 2 and plan.dp > 1:
        out.add("fsdp")
    if plan.tp > 1:
        out.add("dtensor")
    return out
