"""What the analytic model takes: a GPT and a parallelism plan (keyword-only, validated), and the GPT's parameter
shapes on one rank (TP sharding, pipeline stage, FSDP units)."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from ..comms.dtypes import dtype_bytes
from ..errors import TracekitError
from .pipeline import SCHEDULES, model_chunks


@dataclass(kw_only=True)
class GPTShape:
    layers: int
    """transformer blocks L"""
    hidden: int
    """hidden size C"""
    heads: int
    """attention heads (divisible by tp)"""
    vocab: int
    """vocabulary V"""
    seq: int
    """sequence length T (also the position-embedding rows)"""
    micro_batch: int
    """sequences per micro-batch and rank b"""
    micro_batches: int = 1
    """micro-batches per step (pipeline); data parallel steps use one"""
    dtype: str = "float32"
    """parameter, gradient and activation dtype"""
    tied_head: bool = False
    """LM head shares the token embedding (GPT-2/3); the examples' GPT has its own head"""
    fused_qkv: bool = False
    """one q/k/v projection (Megatron) instead of three (the examples' GPT)"""
    experts: int = 0
    """experts of every block's mixture-of-experts MLP (each shaped like the dense MLP); 0: a dense MLP"""
    top_k: int = 1
    """experts each token is routed to (with experts > 0)"""

    def __post_init__(self):
        for name in ("layers", "hidden", "heads", "vocab", "seq", "micro_batch", "micro_batches", "top_k"):
            if getattr(self, name) < 1:
                raise TracekitError(f"model {name} must be ≥ 1, not {getattr(self, name)}")
        if self.experts < 0:
            raise TracekitError(f"model experts must be ≥ 0 (0: dense), not {self.experts}")
        if self.experts and self.top_k > self.experts:
            raise TracekitError(f"model top_k {self.top_k} exceeds its {self.experts} experts")
        if self.hidden % self.heads:
            raise TracekitError(f"hidden {self.hidden} must be divisible by heads {self.heads}")
        if dtype_bytes(self.dtype) is None:
            raise TracekitError(f"unknown dtype {self.dtype!r}")

    @property
    def elem_bytes(self) -> int:
        return dtype_bytes(self.dtype)


@dataclass(frozen=True)
class PlanField:
    """A field of Plan that the command line and the API may change (PLAN_FIELDS): its type, the values it
    may take (None: any the type allows) and its help. The CLI's options (tracekit.cli.options.plan_options),
    the command's refusal of a mixture (cli/whatif.py), the API's predict_plan, the plan a run's plan is changed into
    (run_plan.plan_with) and Plan's own validation read it."""
    name: str
    type: type
    help: str
    choices: tuple | None = None
    needs: str | None = None
    """a bool's degree that must exceed 1 for it to mean anything (the sweep tries it there)"""
    said: str | None = None
    """a bool's words in a plan's description, where it is on"""

    @property
    def flag(self) -> str:
        """The command line's spelling: --sequence-parallel (a bool: and --no-sequence-parallel)."""
        return "--" + self.name.replace("_", "-")

    def spelled(self, value) -> str:
        """The flag that gives ``value``: ``--zero 2``, ``--sequence-parallel``, ``--no-sequence-parallel``."""
        if self.type is bool:
            return self.flag if value else "--no-" + self.flag[2:]
        return f"{self.flag} {value}"


# the model's dimensions a command or tracekit.predict_plan may change over a preset or the run's model
MODEL_FIELDS = ("layers", "hidden", "heads", "vocab", "seq", "micro_batch", "micro_batches", "dtype", "experts",
                "top_k")

PLAN_FIELDS = (
    PlanField("dp", int, "data-parallel degree"),
    PlanField("tp", int, "tensor-parallel degree"),
    PlanField("pp", int, "pipeline stages"),
    PlanField("ep", int, "expert parallelism: experts split over the dp ranks (ep = dp)"),
    PlanField("zero", int, "0 DDP, 1 ZeRO-1, 2 FSDP without reshard, 3 FSDP/ZeRO-3", (0, 1, 2, 3)),
    PlanField("sequence_parallel", bool, "Megatron sequence parallelism (with tp > 1); --no-sequence-parallel: "
              "without it, from a run that has it", needs="tp", said="sequence parallel"),
    PlanField("backend", str, "collective backend: gloo carries reduce_scatter as allreduce", ("gloo", "nccl")),
    PlanField("schedule", str, "pipeline schedule to simulate [default: the run's, else 1f1b]", SCHEDULES),
)


@dataclass(kw_only=True)
class Plan:
    dp: int = 1
    """data-parallel degree"""
    tp: int = 1
    """tensor-parallel degree"""
    pp: int = 1
    """pipeline stages"""
    zero: int = 0
    """0: DDP; 1: ZeRO-1 (DDP + ZeroRedundancyOptimizer); 2: FSDP2 without reshard; 3: FSDP2 (ZeRO-3)"""
    sequence_parallel: bool = False
    """Megatron sequence parallelism (with tp > 1)"""
    ep: int = 1
    """expert-parallel degree: each MoE layer's experts split over ep data-parallel ranks (ep = dp)"""
    backend: str = "gloo"
    """gloo carries reduce_scatter as allreduce; nccl has it"""
    bucket_cap_mb: float = 25
    """DDP bucket size, MiB"""
    first_bucket_mb: float = 1
    """DDP's first bucket, MiB (torch.distributed._DEFAULT_FIRST_BUCKET_BYTES)"""
    schedule: str = "1f1b"
    """pipeline schedule (pp > 1): gpipe, 1f1b or interleaved (1F1B over ``chunks`` model chunks per stage)"""
    chunks: int = 2
    """model chunks per stage with the interleaved schedule"""

    def __post_init__(self):
        for name in ("dp", "tp", "pp", "ep"):
            if getattr(self, name) < 1:
                raise TracekitError(f"plan {name} must be ≥ 1, not {getattr(self, name)}")
        for f in PLAN_FIELDS:
            if f.choices is not None and getattr(self, f.name) not in f.choices:
                *most, last = (str(c) for c in f.choices)
                raise TracekitError(f"plan {f.name} must be {', '.join(most)} or {last}, not {getattr(self, f.name)!r}")
        if self.chunks < 1:
            raise TracekitError(f"plan chunks must be ≥ 1, not {self.chunks}")

    @property
    def world(self) -> int:
        return self.dp * self.tp * self.pp


_GPT3 = dict(vocab=50257, seq=2048, micro_batch=1, micro_batches=1, dtype="bfloat16", tied_head=True, fused_qkv=True)

PRESETS = {
    # The GPT-3 family (Brown et al. 2020, table 2.1): layers, d_model, heads; 2048 context. Two rows of the
    # table give head counts that do not divide d_model (1.3B: 24 heads of 128 for 2048; 13B: d_model
    # 5140 with 40 heads of 128): here 16 heads (2048 = 16 x 128) and d_model 5120 (40 x 128).
    "gpt3-125m": dict(layers=12, hidden=768, heads=12, **_GPT3),
    "gpt3-350m": dict(layers=24, hidden=1024, heads=16, **_GPT3),
    "gpt3-760m": dict(layers=24, hidden=1536, heads=16, **_GPT3),
    "gpt3-1.3b": dict(layers=24, hidden=2048, heads=16, **_GPT3),
    "gpt3-2.7b": dict(layers=32, hidden=2560, heads=32, **_GPT3),
    "gpt3-6.7b": dict(layers=32, hidden=4096, heads=32, **_GPT3),
    "gpt3-13b": dict(layers=40, hidden=5120, heads=40, **_GPT3),
    "gpt3-175b": dict(layers=96, hidden=12288, heads=96, **_GPT3),
    "gpt2-small": dict(layers=12, hidden=768, heads=12, vocab=50257, seq=1024, micro_batch=8, dtype="bfloat16",
                       tied_head=True, fused_qkv=True),
    "example": dict(layers=2, hidden=64, heads=4, vocab=256, seq=32, micro_batch=4, micro_batches=2),
}


def check_fits(shape: GPTShape, plan: Plan, world: int | None = None, asked: bool = False) -> None:
    """Refuse, in one line, a plan that cannot run this model (or, given ``world``, this many ranks: the run's,
    or ``asked`` by --world)."""
    why = None
    if shape.heads % plan.tp:
        why = f"tp {plan.tp} does not divide the model's {shape.heads} attention heads"
    elif shape.layers % plan.pp:
        why = (f"pp {plan.pp} does not divide the model's {shape.layers} layers"
               + (" (a stage would hold no layer)" if plan.pp > shape.layers else ""))
    elif plan.sequence_parallel and plan.tp == 1:
        why = "sequence parallelism shards over tensor-parallel ranks: it needs tp > 1"
    elif plan.sequence_parallel and shape.seq % plan.tp:
        why = f"sequence parallel: tp {plan.tp} does not divide the sequence length {shape.seq}"
    elif plan.pp > 1 and shape.layers % (plan.pp * (c := model_chunks(plan.schedule, plan.chunks))):
        why = f"{plan.schedule}: pp {plan.pp} x {c} chunks does not divide the model's {shape.layers} layers"
    elif plan.pp > 1 and plan.schedule == "interleaved" and shape.micro_batches % plan.pp:
        why = f"interleaved: pp {plan.pp} does not divide the {shape.micro_batches} micro-batches"
    elif plan.ep > 1 and not shape.experts:
        why = f"ep {plan.ep} splits experts: the model has none (--experts N gives it some)"
    elif plan.ep > 1 and shape.experts % plan.ep:
        why = f"ep {plan.ep} does not divide the model's {shape.experts} experts"
    elif plan.ep > 1 and (plan.ep != plan.dp or plan.tp > 1 or plan.zero):
        why = (f"the model covers expert parallelism over all data-parallel ranks (ep = dp) with DDP "
               f"(zero 0) and no tensor parallelism; this plan has ep {plan.ep}, dp {plan.dp}, tp {plan.tp}, "
               f"zero {plan.zero}")
    elif shape.experts and plan.tp > 1:
        why = (f"tp {plan.tp} would shard the model's {shape.experts} experts by tensor parallelism, which the model "
               "does not cover (its experts run whole: ep = dp with tp 1, or ep 1)")
    elif world is not None and plan.world != world:
        n = f"{plan.world} rank{'' if plan.world == 1 else 's'}"
        why = (f"dp {plan.dp} x tp {plan.tp} x pp {plan.pp} = {n}, --world asks for {world} (--dp, --tp or --pp "
               "to fill them)" if asked else f"dp {plan.dp} x tp {plan.tp} x pp {plan.pp} = {n}, the run has {world}")
    if why:
        raise TracekitError(f"impossible plan: {why}")


def _build(cls, given: dict, where: str):
    known = {f.name for f in fields(cls)}
    try:
        return cls(**{k: v for k, v in given.items() if k in known})
    except TypeError as exc:  # a required field is missing
        raise TracekitError(f"the recorded config's {where} is incomplete ({exc}); it needs model.{{layers, hidden, "
                            "heads, vocab, seq, micro_batch} and plan.{dp, tp, pp, zero}") from None


def from_recorded(config: dict) -> tuple[GPTShape, Plan]:
    """The (model, plan) that tracekit.profiler.record_config stored in a trace; keys that are not fields
    (the examples also record the scheme, batch and group names) are ignored. A bucket_cap_mb recorded
    without first_bucket_mb caps the first bucket too: torch's DDP keeps its 1 MiB first bucket only under
    the default cap (torch/nn/parallel/distributed.py, is_using_default)."""
    if not isinstance(config.get("model"), dict) or not isinstance(config.get("plan"), dict):
        raise TracekitError("the recorded config needs a 'model' and a 'plan' object")
    plan = dict(config["plan"])
    if "bucket_cap_mb" in plan and "first_bucket_mb" not in plan:
        plan["first_bucket_mb"] = plan["bucket_cap_mb"]
    return _build(GPTShape, config["model"], "model"), _build(Plan, plan, "plan")


# --- Parameter shapes of the GPT on one rank: TP sharding (Megatron), pipeline stage, FSDP units ---


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
