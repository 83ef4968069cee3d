"""Parameter shapes of the GPT on one rank: TP sharding (Megatron), pipeline stage, FSDP units."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .config import GPTShape, Plan


@dataclass(frozen=True)
class Param:
    unit: str  # FSDP unit: "block.i" or "root"
    name: str
    shape: tuple[int, ...]  # on this rank, after tensor-parallel sharding
    expert: bool = False  # an expert's own parameter (with ep > 1: on this rank only, never allreduced)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


def _block(i: int, m: GPTShape, t: int, ep: int = 1) -> list[Param]:
    C, u = m.hidden, f"block.{i}"
    # column- and row-parallel linears, one line each (as defs, twice the lines for the same two rules)
    col = lambda n, out, inp: [Param(u, f"{n}.weight", (out // t, inp)), Param(u, f"{n}.bias", (out // t,))]  # noqa: E731
    row = lambda n, out, inp: [Param(u, f"{n}.weight", (out, inp // t)), Param(u, f"{n}.bias", (out,))]  # noqa: E731
    ps = [Param(u, "ln1.weight", (C,)), Param(u, "ln1.bias", (C,))]
    ps += col("attn.qkv", 3 * C, C) if m.fused_qkv else col("attn.q", C, C) + col("attn.k", C, C) + col("attn.v", C, C)
    ps += row("attn.proj", C, C)
    ps += [Param(u, "ln2.weight", (C,)), Param(u, "ln2.bias", (C,))]
    if not m.experts:
        return ps + col("mlp.fc", 4 * C, C) + row("mlp.fc_out", C, 4 * C)
    ps.append(Param(u, "mlp.router.weight", (m.experts, C)))  # no bias
    for j in range(m.experts // ep):  # this rank's experts, each shaped like the dense MLP
        e = f"mlp.experts.{j}"
        ps += [Param(u, f"{e}.fc.weight", (4 * C, C), True), Param(u, f"{e}.fc.bias", (4 * C,), True),
               Param(u, f"{e}.fc_out.weight", (C, 4 * C), True), Param(u, f"{e}.fc_out.bias", (C,), True)]
    return ps


def stage_layers(m: GPTShape, plan: Plan, stage: int) -> range:
    per = m.layers // plan.pp
    return range(stage * per, (stage + 1) * per)


def rank_params(m: GPTShape, plan: Plan, stage: int = 0) -> list[Param]:
    """Parameters held by a rank of pipeline stage ``stage``, in registration order."""
    t = plan.tp
    shard = t if plan.sequence_parallel else 1  # embeddings and head are vocab/row-sharded only with SP
    first, last = stage == 0, stage == plan.pp - 1
    ps: list[Param] = []
    if first:
        ps += [Param("root", "wte.weight", (m.vocab // shard, m.hidden)),
               Param("root", "wpe.weight", (m.seq // shard, m.hidden))]
    for i in stage_layers(m, plan, stage):
        ps += _block(i, m, t, plan.ep)
    if last:
        ps += [Param("root", "ln_f.weight", (m.hidden,)), Param("root", "ln_f.bias", (m.hidden,))]
        if not m.tied_head or not first:
            ps.append(Param("root", "head.weight", (m.vocab // shard, m.hidden)))
    return ps


def total_params(m: GPTShape) -> int:
    """Parameters of the whole model, unsharded."""
    return sum(p.numel for p in rank_params(m, Plan()))


def padded_numel(p: Param, dp: int) -> int:
    """FSDP2 shards dim 0 across dp ranks, padding it to a multiple of dp."""
    d0 = p.shape[0]
    return math.ceil(d0 / dp) * dp * math.prod(p.shape[1:])
