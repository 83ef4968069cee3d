"""The role of a process group (DP, TP or PP) and its size under a plan: the one mapping that validate,
whatif and the plan inference use."""

from __future__ import annotations

import re

ROLES = ("DP", "TP", "PP")
# words in a process group's description that name its role (Megatron's TENSOR_MODEL_PARALLEL_GROUP,
# torchtitan's dp_shard / tp / pp, DeepSpeed's data_parallel, ...); checked in this order
_ROLE_WORDS = (("PP", {"pp", "pipe", "pipeline"}), ("TP", {"tp", "tensor", "mp"}),
               ("DP", {"dp", "data", "ddp", "fsdp", "zero", "replicate", "shard"}))
POINT_TO_POINT = ("send", "recv", "sendrecv")


def role_sizes(plan) -> dict[str, int]:  # plan: analytic.config.Plan (duck-typed: dp, tp, pp, ep)
    """Ranks in a group of each role: {"DP": dp, "TP": tp, "PP": pp, "EP": ep} (EP: expert parallelism,
    over the data-parallel ranks, named by the recorded config's groups only)."""
    return {**{role: getattr(plan, role.lower()) for role in ROLES}, "EP": plan.ep}


def role_of_desc(desc: str | None) -> str | None:
    if not desc:
        return None
    words = set(re.split(r"[^a-z]+", desc.lower()))
    for role, names in _ROLE_WORDS:
        if words & names:
            return role
    return None


def group_role(named: str | None, pg_desc: str | None, group_size: int | None, collective: str,
               plan) -> str:  # plan: analytic.config.Plan or None
    """DP, TP or PP for a collective's group, else 'unknown', from the first that says: the role the
    recorded config names the group with (``named``), the words of its description, point-to-point
    (pipeline stages), the one role of the plan whose size is the group's (with groups of more than one
    rank; any, when the size is unknown and the plan has one such role)."""
    if named:
        return named
    by_desc = role_of_desc(pg_desc)
    if by_desc:
        return by_desc
    if collective in POINT_TO_POINT:
        return "PP"
    if plan is not None:
        sizes = {r: n for r, n in role_sizes(plan).items() if n > 1}
        fits = [r for r, n in sizes.items() if n == group_size] if group_size else list(sizes)
        if len(fits) == 1:
            return fits[0]
    return "unknown"


FORWARD_SHARE = 0.25  # a group whose all-reduces run this share of the time outside the backward, or more: TP


def roles_from_phases(rows) -> dict[tuple, tuple[str, str]]:
    """The role of each process group (key: pg_name, pg_desc, group_size) that where its collectives are
    launched tells (rows: sql/reports/_group_phases.sql), with the reason in words: launched under a
    tensor-parallel op (Megatron's ...ParallelRegion, Column/RowParallelLinear, DTensor's Redistribute): TP;
    all-reduces or reduce-scatters in the forward pass as well as the backward (a quarter of them or more,
    two at least): TP, since data parallelism reduces gradients in the backward only (a loss all-reduced
    for logging is one); all of them in the backward: DP. Other groups are left out."""
    by: dict[tuple, list] = {}
    for r in rows:
        by.setdefault((r["pg_name"], r["pg_desc"], r["group_size"]), []).append(r)
    out = {}
    for key, rs in by.items():
        tp = next((r for r in rs if r["tp_op"]), None)
        red = [r for r in rs if r["collective"] in ("allreduce", "reduce_scatter")]
        fwd, bwd, n = (sum(r[k] for r in red) for k in ("forward", "backward", "n"))
        if tp:
            out[key] = ("TP", f"inferred from the trace: its {tp['collective']}s are launched under {tp['tp_op']}")
        elif n and fwd >= 2 and bwd >= 1 and fwd >= FORWARD_SHARE * n:
            out[key] = ("TP", f"inferred from the trace: {fwd} of its {n} reductions (all ranks) run in the forward "
                              "pass, not only the backward as data parallelism's do")
        elif n and bwd == n:
            out[key] = ("DP", f"inferred from the trace: its {n} reductions (all ranks) run in the backward pass")
    return out
