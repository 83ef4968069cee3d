"""The model and plan a run ran: recorded in its traces, given (--config, model flags), or inferred from
its process groups; and the role (DP, TP, PP) of each of its groups. Every inference is stated."""

from __future__ import annotations

from dataclasses import dataclass, field

from .analytic import GPTShape, Plan, check_fits, from_recorded
from .analytic.config import PLAN_FIELDS
from .analytic.roles import ROLES, group_role, role_of_desc, roles_from_phases
from .errors import TracekitError

GROUPS_SQL = """
SELECT c.pg_name, nullif(c.pg_desc, '') AS pg_desc, c.collective,
       CAST(coalesce(c.group_size, max(i.expected_ranks)) AS BIGINT) AS group_size, count(*) AS n
FROM collectives c
LEFT JOIN collective_waits w ON w.rank = c.rank AND w.event_index = c.event_index
LEFT JOIN collective_instances i ON i.instance_key = w.instance_key
GROUP BY c.pg_name, c.pg_desc, c.collective, c.group_size
"""


@dataclass
class RunPlan:
    world: int
    shape: GPTShape | None
    plan: Plan | None
    source: str  # one sentence: where the plan comes from
    names: dict[int, dict[str, str]] = field(default_factory=dict)  # rank -> {pg_name: role} recorded
    model_source: str = ""  # where the model comes from (a preset, --config, the recorded config), when known
    traced: dict = field(default_factory=dict)  # (pg_name, pg_desc, group_size) -> (role, why): from the trace

    def _traced(self, pg_name, pg_desc, group_size):
        return self.traced.get((None if pg_name is None else str(pg_name), pg_desc or None, group_size))

    def role(self, rank, pg_name, pg_desc, group_size, collective) -> str:
        """DP, TP or PP for a collective's group, else 'unknown'."""
        named = self.names.get(rank, {}).get(str(pg_name)) if pg_name is not None else None
        if named is None and pg_name is not None and not self.names.get(rank):
            named = next((r for m in self.names.values() for n, r in m.items() if n == str(pg_name)), None)
        if named is None and not role_of_desc(pg_desc):
            named = (self._traced(pg_name, pg_desc, group_size) or (None,))[0]
        return group_role(named, pg_desc, group_size, collective, self.plan)

    def role_and_source(self, rank, row) -> tuple[str, str]:
        """(role, how it is known) of a collective's group (``row``: pg_name, pg_desc, group_size,
        collective): recorded, described, inferred (said as such); ('unknown', '') when nothing says."""
        named = self.names.get(rank, {}).get(str(row["pg_name"])) if row["pg_name"] is not None else None
        if named:
            return named, "recorded in the traces' config"
        if role_of_desc(row["pg_desc"]):
            return role_of_desc(row["pg_desc"]), "from the group's description"
        traced = self._traced(row["pg_name"], row["pg_desc"], row["group_size"])
        if traced and row["collective"] not in ("alltoall", "alltoallv", "send", "recv", "sendrecv"):
            return traced
        if row["collective"] in ("alltoall", "alltoallv"):  # (not a role the groups' sizes can tell)
            return "EP", "inferred: all-to-all is the expert (or embedding) exchange"
        role = self.role(rank, row["pg_name"], row["pg_desc"], row["group_size"], row["collective"])
        if role == "unknown":
            return role, ""
        if row["collective"] in ("send", "recv", "sendrecv"):
            return role, "inferred: point-to-point"
        return role, "inferred from the group's size and the plan (tracekit whatif RUN says how)"


def _recorded(run) -> list[dict]:
    from .analytic.recorded import recorded_configs

    return list(recorded_configs(run).items())


def resolve(run, config: dict | None = None, shape: GPTShape | None = None) -> RunPlan:
    """The run's model and plan: ``config`` (a --config file: model, and plan if it has one) over the
    recorded config; ``shape`` (from --preset and model flags) over both; the plan inferred from the
    trace where neither gives one."""
    world = max([r["world_size"] or 0 for r in run.sql("SELECT world_size FROM traces").to_pylist()]
                + [len(run.ranks)])
    recorded = _recorded(run)
    names = {rank: {str(v): k for k, v in (c.get("plan", {}).get("groups") or {}).items()} for rank, c in recorded}
    given = config if config is not None else (recorded[0][1] if recorded else None)
    where = "--config" if config is not None else "the config recorded in the traces"
    rec_shape = rec_plan = None
    if given:
        if "model" in given and "plan" in given:
            rec_shape, rec_plan = from_recorded(given)
        elif "model" in given:
            rec_shape, _ = from_recorded({**given, "plan": {}})
        else:
            raise TracekitError(f"{where} needs a 'model' object (and may have a 'plan')")
    out = RunPlan(world, shape or rec_shape, rec_plan, f"plan from {where}", names, traced=_traced_roles(run))
    if rec_plan is None:
        out.plan, out.source = infer(run, out, world)
    return out


def _traced_roles(run) -> dict:
    from . import sql_files as _sql

    try:
        rows = run.sql(_sql.load("reports", "_group_phases").text).to_pylist()
    except TracekitError:  # (the events are not here: roles from the config, descriptions and sizes only)
        return {}
    return {(None if k[0] is None else str(k[0]), k[1], k[2]): v for k, v in roles_from_phases(rows).items()}


def infer(run, rp: RunPlan, world: int) -> tuple[Plan | None, str]:
    """The plan from the process groups: named roles and their sizes; else, when every collective spans
    the whole world and none is point-to-point, data parallelism over all ranks."""
    rows = run.sql(GROUPS_SQL).to_pylist()
    backend = "gloo" if (run.sql("SELECT any_value(backend) AS b FROM traces").to_pylist()[0]["b"] or "") == "gloo" \
        else "nccl"
    if not rows:
        return None, "no plan: the run has no collective to infer one from"
    p2p = any(r["collective"] in ("send", "recv") for r in rows)
    sizes: dict[str, set] = {}
    for r in rows:
        role = (role_of_desc(r["pg_desc"]) or ("PP" if r["collective"] in ("send", "recv") else None)
                or (rp._traced(r["pg_name"], r["pg_desc"], r["group_size"]) or (None,))[0])
        if role and r["group_size"] and not (role == "PP" and r["collective"] in ("send", "recv")):
            sizes.setdefault(role, set()).add(r["group_size"])
    if any(len(s) > 1 for s in sizes.values()):
        return None, "no plan: groups of one role have several sizes; pass --config FILE or --dp/--tp/--pp"
    deg = {k: next(iter(v)) for k, v in sizes.items()}
    why = [f"{k.lower()} {v} (groups described as {k})" for k, v in deg.items()]
    spans = {r["group_size"] for r in rows if r["collective"] != "barrier"}
    if not deg and not p2p and spans == {world}:
        deg["DP"] = world
        why = [(f"dp {world} (every collective spans all {world} ranks; no named groups, no send/recv: "
                "assumed data parallel)")]
    elif not deg and not p2p and spans <= {world, None}:
        deg["DP"] = world
        why = [(f"dp {world} (the trace gives no group sizes, names no groups and has no send/recv: assumed "
                f"data parallel over all {world} ranks; pass --dp/--tp/--pp if not)")]
    if "PP" not in deg and not p2p:
        deg["PP"] = 1
    missing = [r for r in ROLES if r not in deg]
    known = 1
    for v in deg.values():
        known *= v
    if len(missing) == 1 and world % known == 0:
        deg[missing[0]] = world // known
        why.append(f"{missing[0].lower()} {world // known} (the rest of world {world})")
    elif missing:
        return None, (f"no plan: the trace does not tell {' and '.join(m.lower() for m in missing)} "
                      f"(world {world}); pass --config FILE or --dp/--tp/--pp")
    dp_colls = {r["collective"]: r["n"] for r in rows
                if rp.role(None, r["pg_name"], r["pg_desc"], r["group_size"], r["collective"]) == "DP"
                or (deg["DP"] > 1 and r["group_size"] in (deg["DP"], None) and not role_of_desc(r["pg_desc"]))}
    zero = 0  # (a broadcast says nothing: DDP broadcasts its buffers every forward)
    # Gloo has no reduce_scatter: FSDP reduces its gradients there with an allreduce, once per gather or two
    reduce = "reduce_scatter" if "reduce_scatter" in dp_colls or backend != "gloo" else "allreduce"
    gathers, reduces = dp_colls.get("allgather", 0), dp_colls.get(reduce, 0)
    if gathers and reduces and (reduce == "reduce_scatter" or gathers >= reduces):
        zero = 3 if gathers >= 1.5 * reduces else 2
        why.append(f"zero {zero} (DP groups run allgather and {reduce}: FSDP"
                   + (", gathering twice per reduce)" if zero == 3 else ", gathering once per reduce)"))
    plan = Plan(dp=deg["DP"], tp=deg["TP"], pp=deg["PP"], zero=zero, backend=backend)
    return plan, "plan inferred from the trace: " + "; ".join(why)


def model_with(base: GPTShape | None, preset: str | None = None, changes: dict | None = None) -> GPTShape | None:
    """The model: a preset, else ``base`` (recorded or --config), with ``changes`` (model flags) over it."""
    import dataclasses

    from .analytic import PRESETS

    changes = {k: v for k, v in (changes or {}).items() if v is not None}
    if preset:
        if preset not in PRESETS:
            raise TracekitError(f"no preset {preset!r}; presets: {', '.join(sorted(PRESETS))}")
        values = dict(PRESETS[preset])
    elif base is not None:
        values = dataclasses.asdict(base)
    elif changes:
        raise TracekitError("model flags change a model: start from --preset NAME or --config FILE")
    else:
        return None
    values.update(changes)
    return GPTShape(**values)


def plan_with(own: Plan | None, world: int, changes: dict | None = None, shape: GPTShape | None = None) -> Plan | None:
    """The plan asked for: ``changes`` (plan flags; None: the run's own) over the run's own plan. Given tp
    and/or pp without dp, dp takes the rest of the world. The run's sequence parallelism is not carried to
    a plan without tensor parallelism (it shards over the tensor-parallel ranks: at tp 1 there is nothing to
    shard); asked for there, it is refused. A plan of dp 1 has ZeRO 0, the run's stage or one asked for
    dropped (one replica has nothing to shard: the same collectives, the same plan)."""
    changes = {k: v for k, v in (changes or {}).items() if v is not None}
    if not changes:
        return own
    base = {"dp": 1, "tp": 1, "pp": 1, "zero": 0, "backend": "nccl"} if own is None else {
        f.name: getattr(own, f.name) for f in PLAN_FIELDS if f.name != "schedule"}
    base.update(changes)
    if base.get("tp") == 1 and "sequence_parallel" not in changes:
        base["sequence_parallel"] = False
    if "dp" not in changes and ("tp" in changes or "pp" in changes):
        tp_pp = base["tp"] * base["pp"]
        if tp_pp < 1 or world % tp_pp:
            if shape is not None:  # a plan that cannot run the model says so first
                check_fits(shape, Plan(**{**base, "dp": 1}))
            kept = [f"{k} {base[k]}" for k in ("tp", "pp") if k not in changes and base[k] > 1]
            hint = (f"{' and '.join(kept)} {'is' if len(kept) == 1 else 'are'} the run's: give --tp/--pp too; "
                    if kept else "")
            raise TracekitError(f"impossible plan: tp {base['tp']} x pp {base['pp']} = {tp_pp} does not divide "
                                f"{world} ranks ({hint}--world N plans for another number of ranks)")
        base["dp"] = world // tp_pp
    if base["dp"] == 1:  # ZeRO shards over the data-parallel ranks: one replica has nothing to shard, so a
        base["zero"] = 0  # plan of dp 1 is the same plan at any stage (whatif's note says the stage dropped)
    return Plan(**base)
