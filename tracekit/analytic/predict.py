"""The analytic model: per rank and training step, the collectives each process group runs.

Sources: ZeRO (Rajbhandari et al., SC'20) for DP/ZeRO volumes; Megatron-LM (Shoeybi et al. 2019;
Narayanan et al., SC'21; Korthikanti et al. 2022 for sequence parallelism) for TP and PP; PyTorch's
own implementations for what actually runs (docs/model.md lists each formula and every departure).
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import GPTShape, Plan, padded_numel, rank_params, stage_layers


@dataclass(frozen=True)
class Expected:
    collective: str
    group: str  # DP, TP, PP or EP
    count: int  # per step on one rank
    bytes: int  # per step on one rank, summed over the count (nccl-tests message bytes)
    why: str


def ddp_buckets(sizes_bytes: list[int], first_cap: int, cap: int) -> list[int]:
    """DDP's bucket assignment: parameters in reverse registration order, a bucket closes once it
    reaches its cap (the first bucket's cap is smaller)."""
    buckets, cur, limit = [], 0, first_cap
    for size in reversed(sizes_bytes):
        cur += size
        if cur >= limit:
            buckets.append(cur)
            cur, limit = 0, cap
    if cur:
        buckets.append(cur)
    return buckets


def _rs(plan: Plan) -> str:
    return "reduce_scatter" if plan.backend == "nccl" else "allreduce"


def _dp(m: GPTShape, plan: Plan, stage: int) -> list[Expected]:
    if plan.dp == 1:
        return []
    s = m.elem_bytes
    ps = [p for p in rank_params(m, plan, stage) if not (p.expert and plan.ep > 1)]  # experts stay local
    total = sum(p.numel for p in ps) * s
    out: list[Expected] = []
    if plan.zero in (0, 1):
        b = ddp_buckets([p.numel * s for p in ps], int(plan.first_bucket_mb * 2**20), int(plan.bucket_cap_mb * 2**20))
        out.append(Expected("allreduce", "DP", len(b), total, "DDP gradient allreduce, one per bucket"))
        if plan.zero == 1:
            out.append(Expected("broadcast", "DP", plan.dp, total,
                                "ZeroRedundancyOptimizer: each rank broadcasts its updated partition"))
        return out
    units: dict[str, int] = {}
    for p in ps:
        units[p.unit] = units.get(p.unit, 0) + padded_numel(p, plan.dp) * s
    n, vol = len(units), sum(units.values())
    gathers = 2 if plan.zero == 3 else 1
    out.append(Expected("allgather", "DP", gathers * n, gathers * vol,
                        "FSDP2 allgather of each unit's parameters" + (" in forward and backward" if gathers == 2
                                                                     else " in forward (kept for backward)")))
    out.append(Expected(_rs(plan), "DP", n, vol, "FSDP2 gradient reduce_scatter per unit"
                        + ("" if plan.backend == "nccl" else " (Gloo has none: FSDP2 allreduces)")))
    return out


def _tp(m: GPTShape, plan: Plan, stage: int) -> list[Expected]:
    if plan.tp == 1:
        return []
    s, b, T, C, V = m.elem_bytes, m.micro_batch, m.seq, m.hidden, m.vocab
    mb = m.micro_batches if plan.pp > 1 else 1
    layers = len(stage_layers(m, plan, stage))
    act = b * T * C * s
    col_inputs = (1 if m.fused_qkv else 3) + 1  # column-parallel layers whose input grad is reduced
    out: list[Expected] = []
    if not plan.sequence_parallel:
        out.append(Expected("allreduce", "TP", mb * layers * (2 + col_inputs), mb * layers * (2 + col_inputs) * act,
                            f"Megatron: 2 allreduce per layer forward, {col_inputs} backward"))
        return out
    ag, rs, ar = [0, 0], [0, 0], [0, 0]  # [count, bytes] per step

    def add(acc, n, nbytes):
        acc[0] += n
        acc[1] += n * nbytes
    add(ag, 4 * layers * mb, act)  # forward before attn and mlp; backward of the two reduce_scatters
    add(rs, 4 * layers * mb, act)  # forward after proj and fc_out; backward of the two allgathers
    if stage == 0:
        add(rs, mb, act), add(rs, mb, T * C * s)  # token and position embeddings to sequence shards
        add(ag, mb, act), add(ag, mb, T * C * s)  # their backward
    if stage == plan.pp - 1:
        add(ag, mb, act), add(ag, mb, b * T * V * s)  # head input, then logits back to replicated
        add(rs, mb, act)  # head input gradient
    norms = 2 * layers + (1 if stage == plan.pp - 1 else 0)
    add(ar, 2 * norms, C * s)  # replicated LayerNorm weights get partial gradients
    out.append(Expected("allgather", "TP", ag[0], ag[1], "sequence parallel: allgather of activations"))
    out.append(Expected(_rs(plan), "TP", rs[0], rs[1], "sequence parallel: reduce_scatter of activations"
                        + ("" if plan.backend == "nccl" else " (Gloo: allreduce of the full tensor)")))
    if plan.backend == "nccl":
        out.append(Expected("allreduce", "TP", ar[0], ar[1], "LayerNorm gradient allreduce"))
    else:
        out[-1] = Expected("allreduce", "TP", rs[0] + ar[0], rs[1] + ar[1],
                           "sequence parallel reduce_scatter (as allreduce on Gloo) + LayerNorm gradients")
    return out


def _pp(m: GPTShape, plan: Plan, stage: int) -> list[Expected]:
    if plan.pp == 1:
        return []
    act = m.micro_batch * m.seq * m.hidden * m.elem_bytes
    n = m.micro_batches * (1 if stage in (0, plan.pp - 1) else 2)
    return [Expected("send", "PP", n, n * act, "activations forward / gradients backward, per micro-batch"),
            Expected("recv", "PP", n, n * act, "the other direction")]


def _ep(m: GPTShape, plan: Plan, stage: int) -> list[Expected]:
    """Expert parallelism: per MoE layer and micro-batch, the token counts per expert (int64), then the
    dispatch and combine all-to-alls forward and again backward. Each moves the routed copies of the
    rank's tokens (micro_batch x seq x top_k rows of hidden): exact for the dispatch a rank sends; the
    combine sends what the rank received, which routing decides, so only the group's total is exact."""
    if plan.ep == 1 or not m.experts:
        return []
    n = (m.micro_batches if plan.pp > 1 else 1) * len(stage_layers(m, plan, stage))
    routed = m.micro_batch * m.seq * m.top_k * m.hidden * m.elem_bytes
    return [Expected("alltoall", "EP", n, n * m.experts * 8, "MoE: token counts per expert before dispatch"),
            Expected("alltoall", "EP", 4 * n, 4 * n * routed,
                     "MoE dispatch and combine, forward and backward: top_k copies of each token")]


def predict_rank(m: GPTShape, plan: Plan, rank: int) -> list[Expected]:
    """Per-step collectives of one global rank (ranks ordered pp-major, then dp, then tp)."""
    stage = rank // (plan.dp * plan.tp)
    return [e for e in _dp(m, plan, stage) + _tp(m, plan, stage) + _pp(m, plan, stage) + _ep(m, plan, stage)
            if e.count]


def predict(m: GPTShape, plan: Plan) -> list[list[Expected]]:
    return [predict_rank(m, plan, r) for r in range(plan.world)]


def predict_stages(m: GPTShape, plan: Plan) -> list[dict]:
    """One step's collectives per pipeline stage, group and collective, on one representative rank of
    each kind of stage (stages differ only as first, middle and last): count and bytes per rank."""
    pp = plan.pp
    stages = {"all": 0} if pp == 1 else {"first": 0, **({"middle": 1} if pp > 2 else {}), "last": pp - 1}
    return [{"stage": label, "group": e.group, "collective": e.collective, "count": e.count,
             "bytes_per_step": e.bytes, "gb_per_step": e.bytes / 1e9, "what": e.why}
            for label, stage in stages.items() for e in predict_rank(m, plan, stage * plan.dp * plan.tp)]
