"""`tracekit advise RUN`: the findings a performance engineer would act on, ranked by what each would save
per step, each with where, the evidence (figures and the SQL that gave them), the change to try and how
sure it is. The rules and their estimates: docs/advise.md. Hygiene (the doctor's warnings) comes last.

How savings combine: each finding's saving is taken from a different part of the step (step_breakdown):
communication findings from a group's exposed transfer, the straggler from waiting at collectives, the
pipeline from starved time on pipeline ranks; so they add up. "Another plan" is the exception: it is an
alternative to the communication findings (a plan's prediction covers the same transfers), not an addition.
"""

from __future__ import annotations

import math

import pyarrow as pa

from .. import sql_files as _sql
from ..analytic.links import nvlink_gbps
from ..comms.buckets import human_bytes
from ..errors import TracekitError
from ..table_meta import FIRST_KEY, NOTE_KEY
from ..words import plural, ranks_named

BUCKET = 25 * 2**20  # DDP's default bucket_cap_mb, the coalescing target
LATENCY_MSG = 256 * 2**10  # messages this small are timed by NCCL's latency, not by bandwidth
BANDWIDTH_MSG = 2**20  # messages this large are timed by bandwidth
LATENCY_MAX_MS = 0.05  # a message that takes longer is not waiting on latency (NCCL's is 5-30 us)
COMBINES = ("savings add up (each comes from a different part of the step: exposed transfer, waiting, "
            "starved time), except 'another plan', an alternative to the communication findings")
COLUMNS = [("priority", pa.int64()), ("finding", pa.string()), ("where", pa.string()), ("evidence", pa.string()),
           ("saving_ms", pa.float64()), ("saving_pct", pa.float64()), ("change", pa.string()),
           ("confidence", pa.string()), ("sql", pa.string())]


FIRST = ("priority", "finding", "saving_ms", "saving_pct", "change", "confidence")  # kept when space is short


def _q(run, name: str) -> list[dict]:
    return run.sql(_sql.load("reports", name).text).to_pylist()


def _finding(what, where, evidence, saving, change, confidence, sql):
    return {"finding": what, "where": where, "evidence": evidence, "saving_ms": saving, "change": change,
            "confidence": confidence, "sql": sql}


def _ms(v) -> str:
    return f"{v:,.3f} ms"


DP_COLLECTIVES = ("allreduce", "reduce_scatter", "allgather", "broadcast")
NO_ESTIMATE = {  # exposed communication whose cure the rules do not size: what to try
    "p2p": "part of the pipeline's schedule (see the pipeline finding): more micro-batches, interleaving",
    "alltoall": "overlap the exchange with compute (pipelined embedding lookups, MoE dispatch/combine overlap)",
    "TP": "tensor parallelism is on the critical path: a smaller tp (tracekit whatif --tp N), sequence "
          "parallelism, or overlapped (async) TP",
}


def comm_findings(run, rp, laws: dict, step_ms: float) -> list[dict]:
    """Exposed communication per group and collective, with its cause: latency-bound (many small
    messages), serialized with compute in a data-parallel group, bandwidth below the link."""
    out = []
    nvlink, one_host = _link_gbps(run)
    for g in _q(run, "_advise_comm"):
        exposed, transfer = g["exposed_ms"], g["transfer_ms"] or g["kernel_ms"]
        if exposed <= 0 or not transfer:
            continue
        coll = g["collective"]
        role = rp.role(int(g["ranks"].split(",")[0]), g["pg_name"], g["pg_desc"], g["group_size"], coll)
        n, msg = g["count_per_step"], g["mean_message_bytes"]
        share = min(exposed / transfer, 1.0)  # of the transfer, what the step pays
        causes, notes, conf = [], [], "medium"
        left = exposed
        if role in ("DP", "unknown") and coll in DP_COLLECTIVES:
            # latency-bound: fewer, larger messages pay the per-message latency fewer times
            law = laws.get((coll, role))
            ideal = max(1, math.ceil((g["bytes_per_step"] or 0) / BUCKET))
            lat = None
            if law and law["sizes"] >= 3 and law["max_bytes"] >= 2 * law["min_bytes"] and law["latency_us"] > 0:
                lat, conf = law["latency_us"] / 1e3, "high"
                notes.append(f"fitted latency {law['latency_us']:.1f} us")
            elif msg is not None and msg <= LATENCY_MSG and transfer / n <= LATENCY_MAX_MS:
                lat = transfer / n  # small, quick messages: their whole time bounds the latency from above
                notes.append(f"{human_bytes(int(msg))} messages: their {lat * 1e3:.1f} us each taken as latency")
            saving = min((n - ideal) * lat * share, left) if lat and n > ideal else 0.0
            if saving > 0:
                causes.append(("latency-bound", saving,
                               (f"fewer, larger messages: {n:,.0f} -> {ideal:,} per step (DDP bucket_cap_mb, FSDP "
                               "wrapping units, coalesced collectives)")))
                left -= saving
            # serialized with compute, where data parallelism can overlap it
            if left > 0 and g["compute_ms"] > 0 and share > 0.8:
                saving = min(left, g["compute_ms"])
                causes.append(("serialized with compute", saving,
                               ("overlap it with compute: DDP's gradient hooks (no sync after backward), FSDP "
                               "prefetch (forward_prefetch, backward_prefetch=BACKWARD_PRE), no blocking wait")))
                left -= saving
        # bandwidth below what the link carries: NVLink's, for a group within one host; what a group across
        # hosts can carry depends on the network (NICs, rails, switches), which the trace does not say
        link_kind = g["link_kind"] or ("intra-node" if one_host else None)
        link = nvlink if link_kind == "intra-node" else None
        busbw = g["transfer_busbw_p50_gbps"]
        if link and msg and msg >= BANDWIDTH_MSG and busbw and left > 0:
            ref = 0.8 * link
            if busbw < 0.5 * ref:
                saving = left * (1 - busbw / ref)
                causes.append(("bandwidth below the link", saving,
                               (f"bus bandwidth {busbw:.1f} GB/s of about {ref:.0f} the link carries: "
                               "check topology (NCCL_DEBUG=INFO, nvidia-smi topo -m), NCCL_ALGO/NCCL_PROTO, "
                               "NCCL_NCHANNELS")))
                conf = "low"
        if link_kind in ("inter-node", "mixed") and busbw:
            notes.append("across hosts: compare its bus bandwidth with what the network carries (NICs x their rate); "
                         "the trace does not say")
        if g["transfer_ms"] is None:  # unmatched (one rank of several traced): waiting may be in it
            conf = "low"
            notes.append("no clean matched instance: kernel time, waiting included, stands for the transfer")
        where = (f"group {g['group_label']} ({role}{', ' + link_kind if link_kind else ''}), {coll}, "
                 f"{ranks_named(g['ranks'])}")
        evidence = (f"exposed {_ms(exposed)} of {_ms(transfer)} transfer per step; "
                    f"{plural(round(n), 'collective', 'collectives')} of "
                    f"{human_bytes(int(msg)) if msg else 'unknown size'} mean"
                    + (f", bus bandwidth {busbw:.2f} GB/s" if busbw else "")
                    + (f"; {'; '.join(notes)}" if notes else ""))
        sql = "sql/reports/_advise_comm.sql (step_breakdown, comm_exposure, collective_instances)"
        if causes:
            causes.sort(key=lambda c: -c[1])
            out.append(_finding("exposed communication: " + " + ".join(c[0] for c in causes), where, evidence,
                                sum(c[1] for c in causes), "; then ".join(c[2] for c in causes), conf, sql))
        elif exposed >= 0.02 * step_ms:  # worth a line, though no rule sizes its cure
            kind = ("p2p" if coll in ("send", "recv") else "alltoall" if coll.startswith("alltoall")
                    else "TP" if role == "TP" else None)
            out.append(_finding("exposed communication", where, evidence, None,
                                NO_ESTIMATE.get(kind, "tracekit timeline RUN: see what runs beside it"), "low", sql)
                       | {"stake_ms": exposed})  # (popped: advise) ranked by it, the most hiding it could save
    return out


def _link_gbps(run) -> tuple[float | None, bool]:
    """The NVLink bus bandwidth of the run's GPU model (None: PCIe or a GPU not in NVLINK_GBPS), and
    whether the whole run is on one host."""
    rows = run.sql("SELECT any_value(gpu_name) AS gpu, count(DISTINCT host_name) AS hosts FROM traces").to_pylist()
    gpu = rows[0]["gpu"] or ""
    return nvlink_gbps(gpu), rows[0]["hosts"] <= 1


def straggler_finding(run) -> list[dict]:
    rows = _q(run, "_advise_straggler")
    if not rows or rows[0]["cost_ms"] <= 0 or rows[0]["times_last"] < rows[0]["instances"] / 2:
        return []
    s = rows[0]
    (steps,) = [max(r["steps"], 1) for r in _q(run, "_advise_step")]
    from .advise_replay import why_late_cause

    cause = why_late_cause(run.sql(_sql.load("reports", "why_late").text, {"per_rank": 3}).to_pylist(), s["rank"],
                           0.25 * s["cost_ms"] * steps)  # an op that explains at least a quarter of the lateness
    lag = s["step_start_lag_ms"] or 0
    if not cause and lag >= 0.5 * s["cost_ms"]:
        change = (f"rank {s['rank']} starts its steps {lag:,.3f} ms after the first rank: the delay comes before "
                  "the step (data loading, the previous step's tail, its host); profile more steps to see it")
    else:
        change = None
    relay = s["waited_for_rank"] is not None and s["own_wait_ms"] >= 0.5 * s["cost_ms"]
    if relay and s["own_p2p_wait_ms"] >= 0.5 * s["own_wait_ms"]:
        return []  # late because it waited at the pipeline's sends and receives: the schedule (pipeline finding)
    if relay and not change:  # late because it waited for another rank earlier (tensor parallel, then data)
        change = (f"rank {s['rank']} itself waits {_ms(s['own_wait_ms'])} a step at other collectives, most for rank "
                  f"{s['waited_for_rank']}: it passes that rank's lateness on; find why rank {s['waited_for_rank']} is "
                  "late (tracekit report RUN why_late)")
    change = change or (f"find why rank {s['rank']} is late: before its launches it spends "
              f"{cause['diff_ms']:,.3f} ms more on {cause['kind']} {cause['name']} than the others "
              "(tracekit report RUN why_late)" if cause else
              f"find why rank {s['rank']} is late: nothing it runs before its launches explains it (tracekit "
              "report RUN why_late): look at what its GPU runs before the collective, and earlier (data loading, "
              "host, clocks)")
    conf = "high" if s["times_last"] >= 0.9 * s["instances"] else "medium"
    keys = {"rank": s["rank"], "lag_ms": s["step_start_lag_ms"] or 0.0, "cost_ms": s["cost_ms"],  # (popped: advise)
            "relays": s["waited_for_rank"] if relay else None}
    return [keys | _finding(f"straggler: rank {s['rank']} arrives last",
                     f"rank {s['rank']}, {s['times_last']:,} of {plural(s['instances'], 'instance', 'instances')}",
                     f"others wait {_ms(s['caused_wait_ms'])} per step for it (summed over them); rank "
                     f"{s['most_delayed_rank']} has {_ms(s['cost_ms'])} of it with nothing else to run",
                     s["cost_ms"], change, conf, "sql/reports/_advise_straggler.sql; sql/reports/why_late.sql")]


def unsized_findings(run, rp, covered: dict, step_ms: float | None) -> list[dict]:
    """What the replay's findings leave out, listed after them without a saving (docs/advise.md): the rank
    that arrives last at most collectives where no late-rank finding names it (the replay times each step
    from the last rank's start: a rank late to its step holds the others up before the replayed step
    begins), and a group's exposed transfer of 2 % of the step or more that hiding in the replay does not
    shorten."""
    out = []
    for f in straggler_finding(run):
        rank, relays = f.pop("rank"), f.pop("relays")
        if rank in covered["ranks"] or relays in covered["ranks"]:  # (a relay of a late rank named: covered)
            continue
        lag = f.pop("lag_ms")
        f["saving_ms"] = None
        f["evidence"] += (f"; not sized by the replay: it starts its steps {lag:,.3f} ms after the first rank, before "
                          "the replayed step begins (the replay times each step from the last rank's start)"
                          if lag >= 0.5 * f.pop("cost_ms") else
                          f"; not sized by the replay's late-rank finding, which does not name rank {rank} (tracekit "
                          f"whatif RUN --fix-rank {rank} replays it at the median rank's pace)")
        out.append(f)
    for g in covered["comm"]:  # (_advise_comm's rows, read by the replay's findings)
        exposed, coll = g["exposed_ms"], g["collective"]
        if not step_ms or exposed < 0.02 * step_ms or (g["group_label"], coll) in covered["groups"]:
            continue
        role, how = rp.role_and_source(int(g["ranks"].split(",")[0]), g)  # (as the replay's findings say it)
        shown = f"{role}, {how}" if how else "role unknown: the trace and config do not say"
        kind = ("p2p" if coll in ("send", "recv") else "alltoall" if coll.startswith("alltoall")
                else "TP" if role == "TP" else None)
        unmatched = ("; no clean matched instance: kernel time, the waiting for other ranks included, stands for "
                     "the transfer" if g["transfer_ms"] is None else "")
        out.append(_finding(
            f"exposed communication: {coll}", f"group {g['group_label']} ({shown}), {coll}, {ranks_named(g['ranks'])}",
            f"exposed transfer {_ms(exposed)} per rank and step (its share of tracekit report RUN breakdown's "
            f"comm_part_by_group; report exposed counts its waiting for other ranks too){unmatched}; replayed with "
            "its transfers hidden the step ends no sooner: no saving is claimed",
            None, NO_ESTIMATE.get(kind, "tracekit timeline RUN: see what runs beside it"), "low",
            "sql/reports/_advise_comm.sql (step_breakdown, comm_exposure, collective_instances)"))
    return out


def pipeline_finding(run, rp) -> list[dict]:
    rows = _q(run, "_advise_pipeline")
    pp = rp.plan.pp if rp.plan else None
    if not rows or not pp or pp < 2:
        return []
    mb = rp.shape.micro_batches if rp.shape and rp.shape.micro_batches > 1 else round(
        min(r["sends_per_step"] for r in rows))
    bubble = sum(r["starved_ms"] + r["p2p_wait_ms"] for r in rows) / len(rows)
    if bubble <= 0 or mb < 1:
        return []
    target = 4 * pp
    # the same work in more, smaller micro-batches: the bubble, (pp - 1) micro-batch slots, shrinks as 1/mb
    saving = bubble * (1 - mb / target) if mb < target else None
    return [_finding("pipeline bubble", f"{plural(len(rows), 'pipeline rank', 'pipeline ranks')}, "
                     f"{plural(pp, 'stage', 'stages')}, {plural(mb, 'micro-batch', 'micro-batches')}",
                     f"stages idle {_ms(bubble)} per step (mean: starved, or waiting for their peer); a schedule "
                     f"of {plural(mb, 'micro-batch', 'micro-batches')} over {plural(pp, 'stage', 'stages')} "
                     f"idles (pp-1)/(mb+pp-1) = {100 * (pp - 1) / (mb + pp - 1):.0f} % of the step",
                     saving, f"more micro-batches ({mb} -> {target}) or an interleaved 1F1B schedule"
                     if saving else "already 4 micro-batches per stage or more: interleaved 1F1B", "medium",
                     "sql/reports/_advise_pipeline.sql")]


def plan_finding(run, ctx) -> list[dict]:
    from .whatif_model import exposed_total, plans_that_fit, predicted_rows

    rp = ctx.rp
    if rp.shape is None or rp.plan is None:
        return []
    own = exposed_total(predicted_rows(ctx, rp.plan))
    if own is None:
        return []
    best = None
    for p in plans_that_fit(rp.shape, rp.world, rp.plan):
        if (p.dp, p.tp, p.pp) == (rp.plan.dp, rp.plan.tp, rp.plan.pp):
            continue
        t = exposed_total(predicted_rows(ctx, p))
        if t is not None and (best is None or t < best[1]):
            best = (p, t)
    if best is None or best[1] >= own:
        return []
    p, t = best
    return [_finding("another plan", f"dp {p.dp} x tp {p.tp} x pp {p.pp} instead of dp {rp.plan.dp} x tp "
                     f"{rp.plan.tp} x pp {rp.plan.pp}", f"predicted exposed communication {_ms(t)} per step against "
                     f"{_ms(own)} for the run's own plan ({rp.source})", own - t,
                     f"tracekit whatif RUN --dp {p.dp} --tp {p.tp} --pp {p.pp} (compute and memory per rank change "
                     "too: the model predicts communication only)", "low",
                     "tracekit whatif (sql/reports/_whatif_*.sql)")]


def validated_plans(run, ctx) -> list[dict]:
    """Another plan (or micro-batch count) only where whatif's predicted step interval lies wholly below the
    run's measured step (whatif_step.better_plans; ``ctx``: the run's whatif context, None where the model
    does not cover the run): the best one, its saving the measured step minus the
    predicted one, its interval in the evidence. An alternative to the other findings, not added to them."""
    from .whatif_step import SKIPPED, better_plans, describe

    skipped: dict = {}
    rows = better_plans(run, ctx=ctx, skipped=skipped) if ctx is not None else []
    if not rows:
        return []
    b = rows[0]

    def listed(plans: list[str]) -> str:
        return " / ".join(plans[:3]) + (f" / {len(plans) - 3} more" if len(plans) > 3 else "")

    above = sum(len(v) for v in skipped.values())
    passed = (f"; the sweep ranks {plural(above, 'plan', 'plans')} above it, not proposed: "
              + "; ".join(f"{len(v)} with {SKIPPED[k]} ({listed(v)})" for k, v in skipped.items()) if above else "")
    mb = f", {plural(b['micro_batches'], 'micro-batch', 'micro-batches')}" if b.get("micro_batches") else ""
    cores = ("; each rank on a core of its own (where a host's ranks share its cores: tracekit whatif RUN "
             "--sweep --cores N)" if ctx.cpu_only and ctx.cores is None else "")
    return [_finding("another plan", f"{b['plan']}{mb} instead of the run's own {describe(ctx.rp.plan)}",
                     f"whatif predicts a step of {_ms(b['step'].value)} ({_ms(b['step'].lo)} to "
                     f"{_ms(b['step'].hi)}) against {_ms(b['measured_step_ms'])} measured (its own plan "
                     f"predicted at {_ms(b['own_step_ms'])}: the saving is the difference of the two predictions); "
                     f"{b['basis']}{cores}{passed}",
                     b["saving_ms"], f"record a few steps under {b['plan']}{mb} and compare (tracekit diff); "
                     "an alternative to the other findings, not added to them", "medium (predicted)",
                     "tracekit whatif RUN --sweep")]


def _steps_text(run) -> str:
    steps = sorted(r["step"] for r in run.sql("SELECT DISTINCT step FROM steps WHERE step IS NOT NULL").to_pylist())
    if not steps:
        return "the whole trace (no ProfilerStep)"
    if steps == list(range(steps[0], steps[-1] + 1)) and len(steps) > 2:
        return f"steps {steps[0]}-{steps[-1]}"
    return ("step " if len(steps) == 1 else "steps ") + ", ".join(map(str, steps))


def hygiene_findings(run) -> list[dict]:
    from ..reports import get

    return [_finding(f"trace hygiene: {r['check']}", ranks_named(r["ranks"]) if r["ranks"] else "the run",
                     r["finding"], None, r["fix"], "-", "sql/reports/doctor.sql")
            for r in get("doctor").run(run).to_pylist() if r["severity"] in ("warning", "error")]


def advise(run) -> pa.Table:
    """The ranked findings (see the module's docstring for how their savings combine)."""
    from ..graph.shared import computed_once as graph_once
    from ..shadow import computed_once

    # every rule reads step_breakdown, the replays the graph: computed once, as temporary tables that
    # shadow the views
    with computed_once(run, ("step_breakdown",)), graph_once(run):
        return _advise(run)


def _advise(run) -> pa.Table:
    from ..analytic.measured import job_step_ms, job_steps_ms
    from .whatif_model import context

    (step,) = _q(run, "_advise_step")
    steps_ms = job_steps_ms(run)
    job_step = job_step_ms(steps_ms)  # the job's step, as whatif and diff read it (job_steps)
    # the percents: of the job's step over the same steps the savings are means over (the replay's and the
    # rules' per-step figures are means): the median is the step as whatif predicts it, robust to one slow
    # step, but a saving that lies in that step (a stall in one of four) was 156 % of it
    mean_step = sum(steps_ms) / len(steps_ms) if steps_ms else None
    step_ms = mean_step if mean_step is not None else step["step_ms"]  # without ProfilerSteps: a rank's timeline
    try:
        ctx = context(run)
        rp = ctx.rp
        laws = ctx.laws
        plan_note = None
    except TracekitError as exc:  # the model does not cover the run: no plan finding, the rest stands
        from ..run_plan import resolve
        from .whatif_model import fit

        ctx, rp, plan_note = None, resolve(run), str(exc)
        laws = {(f["collective"], f["kind"]): f for f in fit(run, rp=rp)}
    from . import advise_replay

    replayed = None  # the replayed step as is, where the replay sizes the findings
    try:  # savings by replay (advise_replay); where the graph does not replay, the rules of thumb below
        found, replay_note, covered = advise_replay.findings(run, rp)
        replayed = covered["step_ms"] or None
    except TracekitError as exc:
        found, replay_note = None, f"no replay ({exc}): savings from the rules of docs/advise.md; {COMBINES}"
    if replayed and step_ms is not None and replayed > 1.02 * step_ms:
        # the percents: of the job's step, or of the replayed step as is (from one step's last work on any rank
        # to the next one's: what each saving is a difference of) where that is over 2 % longer: where the ranks'
        # threads run ahead of their GPUs (an NCCL call never blocks them) their ProfilerSteps end before the
        # step's work does (200 us saved a step read 200 % of 100 us ProfilerSteps, of a step whose GPUs take
        # 453 us: tests/graph/test_gpu_bounds.py; 1.000 ms read 95 % of an attacker's 1.054 ms)
        step_ms = replayed
    else:
        replayed = None
    steps = _steps_text(run)
    if found is not None:
        for f in found:
            f["where"] += f", {steps}"
        better = validated_plans(run, ctx)
        # the bound leads (with or without a saving); the rest by saving, each with one
        lead = found[:1]
        # (a bound that late ranks lead, with no saving: GPU-bound, said after the sized findings)
        after = [f for f in found[1:] if f.pop("after_sized", False) and not (f["saving_ms"] and f["saving_ms"] > 0)]
        rest = [f for f in found[1:] + better if f["saving_ms"] and f["saving_ms"] > 0]
        rest.sort(key=lambda f: -f["saving_ms"])
        found = lead + rest + after + unsized_findings(run, rp, covered, step_ms)
        measure = "" if better else advise_replay.measure_instead(rp)
        if measure:
            replay_note += "; " + measure
    else:
        found = comm_findings(run, rp, laws, step_ms or 0) + straggler_finding(run) + pipeline_finding(run, rp)
        # by saving; a finding no rule sizes by what is at stake (an exposed transfer: its exposed time, the
        # most that hiding it saves), not below every sized one (2.1 ms of exposed TP under a 0.02 ms saving)
        found.sort(key=lambda f: -(f["saving_ms"] if f["saving_ms"] is not None else f.get("stake_ms") or 0))
        for f in found:
            for key in ("rank", "lag_ms", "cost_ms", "stake_ms", "relays"):
                f.pop(key, None)
        for f in found:  # measured over the profiled steps: say which
            f["where"] += f", {steps}"
        if ctx is not None:  # a model's prediction after what was measured (and the most costly change to try)
            found += plan_finding(run, ctx)
    found += hygiene_findings(run)
    for i, f in enumerate(found):  # one step for every percent
        f["priority"] = i + 1
        f["saving_pct"] = None if f["saving_ms"] is None or not step_ms else 100 * f["saving_ms"] / step_ms
    if job_step:
        note = (f"the job's step {job_step:,.3f} ms (the longest rank's ProfilerStep, median over "
                f"{plural(step['steps'], 'step', 'steps')}; {plural(step['ranks'], 'rank', 'ranks')})")
        if replayed:
            note += (f"; percents are of the replayed step as is, {replayed:,.3f} ms, the longer: the step's work "
                     "outlasts its ProfilerSteps (the ranks' threads run ahead of their GPUs), and each saving is a "
                     "difference of replayed steps")
        elif f"{mean_step:,.3f}" != f"{job_step:,.3f}":
            note += (f"; percents are of its mean over those steps, {mean_step:,.3f} ms ({min(steps_ms):,.3f} to "
                     f"{max(steps_ms):,.3f} ms), as each saving is a mean over them")
    elif step_ms is None:
        note = ("no step time: no rank has a step or a timeline of any length (its ProfilerSteps last 0 ns, or it "
                "has none and no kernel or collective); savings are not a share of anything")
    else:
        note = (f"step {step_ms:,.3f} ms (the mean rank's timeline: the traces hold no ProfilerStep of any length; "
                f"{plural(step['ranks'], 'rank', 'ranks')})")
    note += f"; {replay_note}"
    if plan_note:
        note += f"; no plan finding: {plan_note}"
    table = pa.Table.from_pylist(found, schema=pa.schema(COLUMNS))
    return table.replace_schema_metadata({NOTE_KEY: note.encode(), FIRST_KEY: ",".join(FIRST).encode()})
