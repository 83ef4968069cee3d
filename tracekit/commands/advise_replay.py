"""advise's findings: what bounds the job's step (bound.sql), then the findings sized by replay: each saving
is the job's measured step minus its replayed step with the finding's cause removed
(graph/counterfactual.py). docs/advise.md says what each cause removed means."""

from __future__ import annotations

import numpy as np

from ..errors import TracekitError
from ..graph import counterfactual as cf
from ..graph.split import split
from ..words import plural, ranges, ranks_named

SQL = ("sql/reports/_advise_cpu_leaves.sql; sql/reports/_advise_transfers.sql "
       "(graph_nodes, graph_edges: the replay, graph/counterfactual.py)")
LEAD_SHARE = 0.05  # late ranks lead the findings where fixing them saves this share of the step or more
PRUNE_MAX = 16  # late ranks checked one by one (a replay each) up to this many; more are named as found
BOUND_SQL = "sql/reports/bound.sql (tracekit report RUN bound); the replay: graph/counterfactual.py"
LATE = {  # cause: (its name, what the excess is, the change to try)
    "idle": ("host idle", "its step thread idle (no op of its own running: asleep, loading data, blocked in "
             "code the profiler does not record)",
             "find what {who} wait{s} for on the CPU (data loading, a sleep or a barrier, host contention): "
             "tracekit timeline RUN, tracekit report RUN why_late"),
    "work": ("host-bound", "its step thread running ops",
             "{who} run{s} more CPU work per step than the others: uneven work (data, sequence lengths, "
             "experts) or a slower or busier host"),
    "start": ("starts late", "its first profiled step starting later",
              "{who} start{s} {their} first profiled step late: the delay comes before it (data loading, the "
              "previous step's tail, {their} host); profile more steps to see it"),
    "compute": ("GPU compute-bound", "its GPU computing",
                "{who} compute{s} longer per step: uneven work or a slower GPU (clocks, power, thermal); "
                "tracekit diff compares their kernels"),
}
BOUND = {  # what bounds a rank's step (bound.sql): (the finding, the change to try)
    "host": ("host-bound", "the host issues the work slower than the GPU runs it: fewer launches (CUDA graphs, "
             "torch.compile with mode='reduce-overhead', fused kernels), more work per launch (larger "
             "micro-batches), less Python per step (py-spy shows where the thread's time goes)"),
    "host idle": ("host idle", "the host runs nothing the profiler records for much of the step: find what "
                  "it waits for (data loading: more DataLoader workers, pin_memory; a sleep or barrier; Python "
                  "the profiler does not record: with_stack=True, py-spy)"),
    "GPU": ("GPU-bound", "the GPU runs most of the step (its queue seldom empties): faster kernels (tracekit report "
            "RUN breakdown names the families: mixed precision, fusion with torch.compile, fewer and larger "
            "kernels); a faster host would not shorten the step"),
    "dependency": ("GPU waiting on its own dependencies", "the GPU idles with its next work already launched (the "
                   "host is ahead): it waits on an event or another stream's work (a copy, a collective on its own "
                   "stream): overlap or shorten what it waits for (tracekit report RUN critical_path names the "
                   "waits; tracekit timeline RUN shows the streams); a faster host would not shorten the step"),
    "waiting": ("waiting for other ranks", "the ranks wait at collectives for others: see the late ranks "
                "(tracekit report RUN stragglers, why_late)"),
}
# host-bound where half the threads' busy time or more is in ops that launch no GPU work (bound.sql's
# host_cpu_only_ms): fewer launches would not remove it
HOST_WORK = ("the host's own CPU work (ops that launch no GPU work) paces the GPU: make it cheaper or move it "
             "off the step's path (py-spy or with_stack=True shows it): overlap it with the GPU's work (no "
             "synchronize or .item() just before it), a DataLoader worker for input work; fewer launches (CUDA "
             "graphs) would not remove it")
CHANGE = {  # the change that fits a group's role
    "DP": "overlap it with the backward pass (DDP's bucketed all-reduce, FSDP prefetch), or fewer, larger "
          "messages (bucket_cap_mb)",
    "TP": "sequence parallelism, async (overlapped) tensor parallelism, or a smaller tp (tensor-parallel "
          "collectives sit between a layer's matmuls: gradient-bucket overlap does not apply to them)",
    "PP": "the pipeline's sends and receives: more micro-batches or an interleaved schedule (measure it: "
          "record the job again with them and compare with tracekit diff)",
    "EP": "overlap the expert exchange (dispatch/combine) with the experts' compute",
    "unknown": "overlap it with compute, or make it faster (topology, NCCL_ALGO/NCCL_PROTO, channels)",
}


def _role(rp, rank, row) -> tuple[str, str]:
    """(role, how it is known): recorded, described or inferred; 'unknown' when nothing says."""
    return ("unknown", "") if rp is None else rp.role_and_source(rank, row)


def _finding(what, where, evidence, saving, change, confidence, sql=SQL):
    return {"finding": what, "where": where, "evidence": evidence, "saving_ms": saving, "change": change,
            "confidence": confidence, "sql": sql}


def _why(run, late: list[int], excess: dict) -> tuple[str, dict]:
    """The ops that why_late finds longer on each late rank before its launches, when one explains a
    quarter of its excess or more: the sentence, and per rank the op's name where it explains half or more
    (the rank's lateness lies in that op: 'host-bound in OP'); else the op of its step thread that takes
    half its excess or more longer than on the median rank (_step_thread_ops.sql)."""
    from .. import sql_files as _sql

    (steps,) = run.sql("SELECT greatest(count(DISTINCT step), 1) AS n FROM steps").column("n").to_pylist()
    rows = run.sql(_sql.load("reports", "why_late").text, {"per_rank": 3}).to_pylist()
    said, inside = [], {}
    for r in late:
        top = why_late_cause(rows, r, 0.25 * excess[r] * steps)
        if top:
            none = "" if top["others_ms"] else " (the others run none of it: a different kernel or op in its place?)"
            # per step: the lead-ups hold the op in at most as many steps as the rank arrived last at
            # collectives (an op after a step's last collective falls in the next step's lead-up: the last
            # step's in none; 0.200 of 0.300 ms a step over 3 steps, an attacker's case)
            per_step = top["diff_ms"] / max(1, min(steps, top["late_instances"] or steps))
            said.append(f"rank {r} spends {per_step:,.3f} ms a step more on {top['kind']} "
                        f"{top['name']} than the others before its launches{none} (tracekit report RUN why_late)")
            if top["kind"] == "cpu op" and top["diff_ms"] >= 0.5 * excess[r] * steps and not _comm_op(top["name"]):
                inside[r] = top["name"]
    # where why_late's lead-ups miss it (an op after the step's last collective: the optimizer's step), the
    # op of the step thread whose time per step exceeds the other ranks' median by half the excess or more,
    # the shortest such (the innermost)
    ops = None
    for r in late:
        if r in inside or not excess.get(r):
            continue
        if ops is None:
            ops = {}
            for row in run.sql(_sql.load("reports", "_step_thread_ops").text).to_pylist():
                ops.setdefault(row["name"], {})[row["rank"]] = row["ms_per_step"]
        ranks = {int(q) for by in ops.values() for q in by}
        cands = []
        for name, by in ops.items():
            if _comm_op(name):
                continue
            others = sorted(by.get(q, 0.0) for q in ranks if q != r)
            diff = by.get(r, 0.0) - (others[(len(others) - 1) // 2] if others else 0.0)
            if diff >= 0.5 * excess[r]:
                cands.append((by.get(r, 0.0), name, diff))
        if cands:
            _, name, diff = min(cands)
            inside[r] = name
            # (not why_late's: its lead-ups end at the rank's last launch, and a Gloo rank whose c10d ops do
            # not pair with its Gloo ops has them on the worker's thread; this is the step thread's op)
            said.append(f"rank {r} spends {diff:,.3f} ms a step more inside {name} than the median rank, on its "
                        "step thread (sql/reports/_step_thread_ops.sql)")
    return (("; " + "; ".join(said)) if said else ""), inside


def why_late_cause(rows: list[dict], rank: int, at_least_ms: float) -> dict | None:
    """why_late's first row of ``rank`` (``rows``: the report's) that names an op, not a collective's own (its
    time there is waiting), longer on the late rank by ``at_least_ms`` or more; None where none is."""
    return next((w for w in rows if w["rank"] == rank and w["kind"] != "lead-up" and not _comm_op(w["name"])
                 and w["diff_ms"] >= at_least_ms), None)


def _comm_op(name: str) -> bool:
    """A communication op or a wait (its time is the collective's or the waiting's, not the host's work)."""
    n = str(name).lower()
    return (n.startswith(("c10d::", "gloo:", "nccl:", "_c10d_functional", "record_param_comms", "symm_mem"))
            or "wait" in n)


def late_finding(run, sp, step: float) -> list[dict]:
    """One finding for the late ranks, whatever their causes: its saving is the replay with them at the
    median rank's pace in every cause (counterfactual.ranks_at_pace), the number `tracekit whatif RUN
    --fix-rank R ...` gives; each rank is named with its largest cause."""
    per: dict[int, dict] = {}  # rank -> {cause: excess ms} where late in it
    for what in cf.CAUSES:
        late, excess = cf.late_ranks(sp, what, step)
        for r in late:
            per.setdefault(r, {})[what] = excess[r]
    if not per:
        return []

    def saving_of(ranks) -> float:
        dur, gap = cf.ranks_at_pace(sp, ranks)
        return step - cf.job_step_ms(sp.replay(durations=dur, gaps=gap))

    # a rank is named only where the saving needs it: the least late first, each left out where the others
    # at the pace save as much without it, within the floor or 5 % of the saving (a healthy rank of two idles
    # as it waits for the other's cause to end, or works in FSDP's hooks: its excess is mostly the other's
    # lateness, not its own)
    floor = max(cf.LATE_MIN_MS, cf.LATE_MIN_SHARE * step)
    late = sorted(per)
    saving = saving_of(late)
    for r in sorted(late, key=lambda q: sum(per[q].values())) if len(late) <= PRUNE_MAX else ():
        if len(late) > 1 and saving_of([q for q in late if q != r]) >= saving - max(floor, 0.05 * saving):
            late = [q for q in late if q != r]
            saving = saving_of(late)
    per = {r: per[r] for r in late}
    if saving <= 0.0005:
        return []
    # each rank's largest cause; a late start only where no cause in the step is half as large (a rank whose
    # optimizer sleeps starts its next step late by as much: the start is the step's consequence)
    main = {}
    for r, c in per.items():
        inner = {w: v for w, v in c.items() if w != "start"}
        best = max(inner, key=inner.get) if inner else "start"
        main[r] = best if best != "start" and inner[best] >= 0.5 * c.get("start", 0.0) else "start"
    named, inside = _why(run, late, {r: max(per[r].values()) for r in late})
    label = {r: LATE[main[r]][0] + (f" in {inside[r]}" if main[r] == "work" and r in inside else "")
             for r in late}
    who = ranks_named(ranges(late))
    if len(set(label.values())) == 1:
        title = f"late {who} ({next(iter(label.values()))})"
    else:
        title = f"late {who} (" + "; ".join(f"{r}: {label[r]}" for r in late) + ")"
    # the change: each rank's main cause's first, then the larger; a late start only where it is a rank's
    # main cause: else it is what that cause left from the steps before the profile (the other ranks' threads,
    # never blocked by NCCL, run ahead by as much each step: a 300 us stall a step read 'starts late +0.600
    # ms' and 'the delay comes before the step' two steps in, an attacker's job)
    mains = set(main.values())
    causes = sorted((w for w in cf.CAUSES if any(w in per[r] for r in late) and (w != "start" or w in mains)),
                    key=lambda w: (w not in mains, -sum(per[r].get(w, 0.0) for r in late)))
    by_step = {w: cf.step_excess(sp, w) for w in cf.IN_STEP if any(w in per[r] for r in late)}  # once a cause

    def lag(r) -> str:  # the late start: once, not per step
        return (f"its first profiled step starts {per[r]['start']:,.3f} ms after the median rank's (once"
                + ("" if main[r] == "start" else ", not per step: what the steps before the profile left, "
                   "the same causes running in them") + ")")

    each = "; ".join(f"rank {r}: " + ", ".join([f"{LATE[w][0]} +{per[r][w]:,.3f} ms"
                                                + _where_in_steps(by_step.get(w, {}).get(r), floor)
                                                for w in cf.IN_STEP if w in per[r]]
                                               + ([lag(r)] if "start" in per[r] else []))
                     for r in late)
    flags = " ".join(f"--fix-rank {r}" for r in late)
    parts = []
    for w in causes:
        rs = [r for r in late if w in per[r]]
        many = len(rs) > 1
        parts.append(LATE[w][2].format(who=f"rank{'s' if many else ''} {ranges(rs)}", s="" if many else "s",
                                       their="their" if many else "its"))
    change = "; ".join(parts) + named
    f = _finding(
        title, who,
        f"per step, against the median rank: {each}; replayed with {who} at the median rank's pace (tracekit "
        f"whatif RUN {flags}), the job's step ends {saving:,.3f} ms sooner, the other ranks' threads keeping "
        "their own pace", saving, change, "high" if saving >= 0.05 * step else "medium")
    f["ranks"] = late
    return [f]


def _where_in_steps(by: dict | None, floor: float) -> str:
    """Where a late rank's mean excess in a cause lies when only some steps hold it (``by``: its excess per
    step, cf.step_excess; over the floor a rank must exceed to be late): ' (in step 2 of 4: +5.000 ms)'; ''
    where every step does (or for a late start: no ``by``)."""
    if not by:
        return ""
    over = {s: v for s, v in by.items() if v >= floor}
    if not over or len(over) == len(by):
        return ""
    return (f" (in step{'s' if len(over) > 1 else ''} {ranges(over)} of {len(by)}: "
            + ", ".join(f"+{v:,.3f}" for _, v in sorted(over.items())) + " ms)")


def bound_rows(run) -> dict[int, dict]:
    """Per rank, what bounds its steps (bound.sql over its steps: the rule lives there)."""
    from .. import sql_files as _sql

    return {r["rank"]: r for r in run.sql(_sql.load("reports", "bound").text, {"by": "rank"}).to_pylist()}


def bound_finding(run, sp, step: float) -> tuple[list[dict], str | None, dict]:
    """What bounds the job's step: the bound (bound.sql) that most ranks share, as a finding, with the
    saving the trace backs: host-bound, the replay with those ranks' host work free (counterfactual.host_free,
    an upper bound); host idle, with their host idle gone (an upper bound); GPU-bound, none (a faster host
    would not shorten the step). Also the bound itself ('waiting': the late-rank finding tells the story)."""
    per = bound_rows(run)
    if not per:
        return [], None, per
    by: dict[str, list[int]] = {}
    for r, o in per.items():
        by.setdefault(o["bound"], []).append(r)
    kind = max(by, key=lambda k: (len(by[k]), k != "waiting"))
    ranks = sorted(by[kind])
    gpu = [o for o in per.values() if o["gpu_busy_ms"] is not None]
    n_all = len(per)

    def pct(key, of=None):
        of = of or list(per.values())
        tot = sum(o["timeline_ms"] for o in of)
        return 100 * sum(o[key] or 0.0 for o in of) / tot if tot else 0.0

    mine = [per[r] for r in ranks]
    where = "every rank" if len(ranks) == n_all and n_all > 1 else (
        "the rank" if n_all == 1 else f"{ranks_named(ranges(ranks))} of {n_all}")
    mine_gpu = [o for o in (per[r] for r in ranks) if o["gpu_busy_ms"] is not None]
    gpus = f"GPUs busy {pct('gpu_busy_ms', mine_gpu):.0f} %" if mine_gpu else "no GPU: CPU training"
    autograd = gpu and bool(run.sql("SELECT 1 FROM _autograd_threads WHERE rank IN (SELECT unnest($r)) LIMIT 1",
                                    {"r": ranks}).num_rows)
    host = "its host threads (the step thread, the autograd thread) busy with their ops" if autograd else \
        "the step thread busy with its own ops"
    evidence = (f"of the step ({where}): {host} {pct('host_busy_ms', mine):.0f} %, "
                f"blocked (synchronize, wait) {pct('host_blocked_ms', mine):.0f} %, idle "
                f"{pct('host_idle_ms', mine):.0f} %; "
                + (f"the GPU busy {pct('gpu_busy_ms', mine):.0f} %, idle with its next op already queued (its "
                   f"launch returned) {pct('gpu_queued_ms', mine):.0f} %, " if gpu else "")
                + _waiting(mine, pct))
    host2 = 0.0
    if kind == "GPU" and gpu:  # a GPU busy most of the step may still wait for its launches: which side paces it?
        host2, gpu2 = _twice_as_fast(sp, ranks, step)
        both = (f"replayed with their host work and launches twice as fast the job's step ends {max(host2, 0.0):,.3f} "
                f"ms sooner, with their kernels and copies twice as fast {max(gpu2, 0.0):,.3f} ms sooner")
        if host2 > max(gpu2, 0.0005):  # (bound, the report the evidence names, reads GPU: said so, first)
            evidence += (f"; tracekit report RUN bound reads GPU-bound (its kernels fill 80 % of the step), yet its "
                         f"host paces more of the step than its GPU: {both}")
            kind, gpus = "host", gpus + ", paced by the host"
        else:
            evidence += f"; {both}"
    name, change = BOUND[kind]
    own = None  # host-bound: the share of the threads' busy time in CPU work of their own (no launch in it)
    if kind == "host" and mine_gpu and pct("host_busy_ms", mine_gpu) > 0:
        own = pct("host_cpu_only_ms", mine_gpu) / pct("host_busy_ms", mine_gpu)
        evidence += f"; {100 * own:.0f} % of their busy time in ops that launch no GPU work"
        if own >= 0.5:  # its own CPU work paces the GPU, not its launches (a .item() sync, then CPU ops)
            change = HOST_WORK
    if kind == "GPU" and host2 > 0.0005:  # a serial host part (a tail after the synchronize) costs too
        change = change.replace("a faster host would not shorten the step",
                                "a faster host would shorten it less (its own serial work: tracekit timeline RUN)")
    title = f"{name} on {where} ({gpus})"
    saving = None
    if kind == "host" and gpu:
        dur, gap = cf.host_free(sp, ranks)
        saving = step - cf.job_step_ms(sp.replay(durations=dur, gaps=gap))
        evidence += ("; replayed with their host work and launches free, the job's step ends "
                     + (f"{saving:,.3f} ms sooner: an upper bound of what a faster host "
                        f"{'' if own is not None and own >= 0.5 else '(fewer launches) '}saves"
                        if saving > 0.0005 else _paced_by(per, ranks)))
    elif kind == "host idle":
        dur = sp.graph.dur_ns.copy()
        dur[sp.host_idle & np.isin(sp.graph.rank, np.asarray(ranks, dtype=np.int64))] = 0
        saving = step - cf.job_step_ms(sp.replay(durations=dur))
        evidence += ("; replayed with their host idle gone, the job's step ends "
                     + (f"{saving:,.3f} ms sooner: an upper bound" if saving > 0.0005 else _paced_by(per, ranks)))
    elif kind == "waiting" and (p2p := _p2p_share(run, ranks)) >= 0.5:
        # a pipeline's stages waiting for each other's sends: the schedule's bubble, no late rank to find
        evidence += f"; {100 * p2p:.0f} % of that waiting at point-to-point sends and receives"
        change = ("the ranks wait mostly at the pipeline's sends and receives: its bubble, which the schedule sets "
                  "(no rank need be late): more micro-batches or an interleaved schedule (measure it: record the job "
                  "again with them and compare with tracekit diff); tracekit report RUN stragglers says whether a "
                  "stage is late besides")
    elif kind == "host":  # CPU training: the host is the compute; no counterfactual of the trace sizes it
        change = ("the step is the CPU's own work (CPU training): more cores per rank, fewer ranks per host, or a "
                  "GPU")
    if saving is not None and saving <= 0.0005:
        saving = None
    # waiting unknown on a rank (none of its collectives matched cleanly): what bounds it is not known either
    sure = all(o["wait_ms"] is not None for o in mine)
    f = _finding(title, where, evidence, saving, change,
                 ("high" if len(ranks) == n_all else "medium") if sure else "low", BOUND_SQL)
    f["bound"], f["ranks"] = kind, ranks
    return [f], kind, per


def _twice_as_fast(sp, ranks: list[int], step: float) -> tuple[float, float]:
    """What the job's step (ms) loses with ``ranks``' host work and launches twice as fast
    (counterfactual.host_faster), and with their kernels and copies twice as fast (gpu_faster): the same
    change to each side, so that which saves more says which paces the step (free of both, the sides are
    not comparable: a serial host tail after the synchronize is all saved, however little the GPU waits)."""
    dur, gap = cf.host_faster(sp, ranks, 0.5)
    host2 = step - cf.job_step_ms(sp.replay(durations=dur, gaps=gap))
    gpu2 = step - cf.job_step_ms(sp.replay(durations=cf.gpu_faster(sp, ranks, 0.5)))
    return host2, gpu2


def _p2p_share(run, ranks: list[int]) -> float:
    """Of ``ranks``' waiting at clean collective instances, the share at point-to-point ones (send, recv):
    sql/reports/_advise_p2p_wait.sql."""
    from .. import sql_files as _sql

    rows = [r for r in run.sql(_sql.load("reports", "_advise_p2p_wait").text).to_pylist() if r["rank"] in ranks]
    total = sum(r["wait_ns"] or 0 for r in rows)
    return sum(r["p2p_wait_ns"] for r in rows) / total if total else 0.0


def _paced_by(per: dict, ranks: list[int]) -> str:
    """Why freeing ``ranks``' host saves nothing: the other ranks, with their bounds, set the job's pace."""
    others = sorted(set(per) - set(ranks))
    if not others:
        return "no sooner"
    by: dict[str, list[int]] = {}
    for r in others:
        by.setdefault(str(per[r]["bound"]), []).append(r)
    kinds = "; ".join(f"{k}: {ranges(rs)}" if len(by) > 1 else k for k, rs in sorted(by.items()))
    one = len(others) == 1
    return (f"no sooner: {ranks_named(ranges(others))} (bound: {kinds}) set{'s' if one else ''} its pace "
            f"({'its finding' if one else 'their findings'} below)")


def _waiting(rows: list[dict], pct) -> str:
    """The ranks' waiting at collectives, as bound.sql knows it: unknown where a rank has collectives and none
    matched cleanly across ranks (never 0 %), a lower bound where some did not."""
    unknown = [o["rank"] for o in rows if o["wait_ms"] is None]
    if unknown:
        return (f"waiting at collectives unknown: no collective of {ranks_named(ranges(unknown))} "
                f"matched cleanly across ranks (tracekit report RUN bound; tracekit doctor RUN "
                "says why)")
    least = min((o["clean_collectives_pct"] for o in rows if o["clean_collectives_pct"] is not None), default=100.0)
    if least < 100.0:
        return (f"waiting at collectives at least {pct('wait_ms', rows):.0f} %: {least:.0f} % of a rank's "
                "collectives matched cleanly across ranks, the others' waiting unknown (tracekit report RUN bound; "
                "tracekit doctor RUN says why)")
    return f"waiting at collectives {pct('wait_ms', rows):.0f} % (tracekit report RUN bound)"


def comm_group_findings(sp, rp, step: float, exposed: dict | None = None) -> list[dict]:
    """A finding per group and collective whose transfers, hidden in the replay, end the step sooner.
    ``exposed``: {(group_label, collective): exposed ms per rank and step} (_advise_comm.sql), to say where
    the replay's saving exceeds it and why."""
    out = []
    exposed = exposed or {}
    for gi, grp in enumerate(sp.groups):
        hidden = step - cf.job_step_ms(sp.replay(durations=cf.comm_changed(sp, gi, "hidden")))
        if hidden <= 0.001:
            continue
        rank0 = min(grp["ranks"])
        role, how = _role(rp, rank0, grp)
        shown = f"{role}, {how}" if how else "role unknown: the trace and config do not say"
        ranks = ranges(grp["ranks"])
        change = CHANGE.get(role, CHANGE["unknown"])
        if grp.get("unmatched"):
            evidence = (f"replayed with its kernels of no duration the step ends {hidden:,.3f} ms sooner: an upper "
                        "bound, since without the other ranks of its instances the kernel time holds both the "
                        "transfer and the waiting for them (ingest every rank to separate them)")
            conf = "low"
        else:
            best = step - cf.job_step_ms(sp.replay(durations=cf.comm_changed(sp, gi, "best")))
            if best >= 0.5 * hidden:
                change = (f"its instances vary in speed: at the group's best measured bus bandwidth it would save "
                          f"{best:,.3f} ms (check what slows the others: link, contention, clocks); or " + change)
            evidence = (f"replayed with its transfers hidden the step ends {hidden:,.3f} ms sooner (an upper bound "
                        f"of overlapping it); at the group's best measured bus bandwidth, {best:,.3f} ms sooner")
            conf = "medium"
        ex = exposed.get((grp["group_label"], grp["collective"]))
        if ex is not None and hidden > 1.1 * ex + 0.001:  # two figures of one transfer that differ: why
            evidence += (f"; more than its exposed transfer {ex:,.3f} ms per rank and step (its share of "
                         "tracekit report RUN breakdown's comm_part_by_group: the time it runs with no compute on "
                         "its rank, its waiting for other ranks aside; report exposed counts that waiting too): "
                         "hidden, it also stops holding up the work that waits for it (the ops after it on its "
                         "thread or stream, the other ranks at their next collective)")
        out.append(_finding(f"exposed communication: {grp['collective']}", f"group {grp['group_label']} ({shown}), "
                            f"{grp['collective']}, {ranks_named(ranks)}", evidence, hidden, change, conf))
        out[-1]["group"] = (grp["group_label"], grp["collective"])
    return out


def findings(run, rp) -> tuple[list[dict], str, dict]:
    """The findings sized by replay (the bound first), a note, and what they cover ({"ranks": the late ranks
    named, "groups": the (group label, collective) pairs whose exposed transfer is sized}: advise lists what
    the replay leaves out without a saving). Each saving is the replay as is minus the replay with the cause
    removed; covered["step_ms"] is the replayed step as is, which advise takes its percents of."""
    from ..graph.shared import too_big

    big = too_big(run)
    if big:
        raise TracekitError(big)
    if not run.sql("SELECT 1 FROM steps LIMIT 1").num_rows:  # said before the graph is read (10,000 ranks: minutes)
        raise TracekitError("the traces hold no ProfilerStep, and the replay times steps")
    sp = split(run)
    base = sp.replay()
    # savings: the replay as is minus the replay changed (where the graph does not give back the measured
    # step, its error would otherwise count as a saving); percents: of this step too (advise)
    step = cf.job_step_ms(base)
    late = late_finding(run, sp, step)
    bound, kind, per = bound_finding(run, sp, step)
    from .. import sql_files as _sql

    comm = run.sql(_sql.load("reports", "_advise_comm").text).to_pylist()
    exposed = {(g["group_label"], g["collective"]): g["exposed_ms"] for g in comm}
    rest = late + comm_group_findings(sp, rp, step, exposed)
    # (the groups' rows go on to advise's unsized findings: the query once)
    covered = {"ranks": set(late[0]["ranks"]) if late else set(), "groups": {f["group"] for f in rest if "group" in f},
               "comm": comm, "step_ms": step}
    rest.sort(key=lambda f: -(f["saving_ms"] or 0))
    # the bound leads; where ranks wait for a few late ones (half the ranks or fewer: stragglers), or on CPU
    # training, and fixing them saves 5 % of the step or more, the late ranks are the story, and the bound
    # says no more when it names only late ranks
    # (on CPU training the host is the compute: its bound is no cure, the late ranks are)
    # (or where the bound finding sizes nothing: four ranks' GPUs busy 83 % read GPU-bound first, unsized,
    # above the late rank they waited 17 % of the step for, whose fix saves it; two host-bound ranks whose
    # host work free saves nothing, a third's slower GPU setting their pace, read host-bound first)
    waits = any(o["bound"] == "waiting" or o["gpu_busy_ms"] is None for o in per.values()) \
        or bool(bound and bound[0]["saving_ms"] is None)
    if late and waits and 2 * len(late[0]["ranks"]) <= len(per) and late[0]["saving_ms"] >= LEAD_SHARE * step:
        lead, rest = late, [f for f in rest if f is not late[0]]
        if bound and not set(bound[0].pop("ranks")) <= set(late[0].pop("ranks")):
            bound[0]["after_sized"] = True  # (without a saving, listed after the sized findings)
            rest = rest + bound
    else:
        lead = bound
    out = lead + rest
    for f in out:
        f.pop("bound", None)
        f.pop("ranks", None)
        f.pop("group", None)
    note = ("savings by replay (the replayed step from one step's last work on any rank to the next one's, mean "
            "over steps); each saving is the replay as is minus the replay with the finding's cause removed; "
            "they do not add up (fixing one changes what the others cost)")
    return out, note, covered


def measure_instead(rp) -> str:
    """What to measure instead of a predicted plan or micro-batch saving (no validated step prediction)."""
    if rp is None or rp.plan is None:
        return ""
    extra = (f"; for the pipeline, {plural(2 * max(rp.shape.micro_batches, 1), 'micro-batch', 'micro-batches')}"
             if rp.plan.pp and rp.plan.pp > 1 and rp.shape is not None else "")
    # the rule's every condition, not one of them: a plan whose interval lies below the step may still be
    # left out (a collective the run never ran, another micro-batch size; whatif_step.better_plans)
    from .whatif_step import OWN_WITHIN

    return ("another plan or more micro-batches: none is proposed (one is only where whatif predicts the "
            f"run's own step within {OWN_WITHIN * 100:.0f} %, the plan's whole predicted interval lies below the "
            "measured step, and the run measured each of its collectives at its micro-batch size: tracekit "
            "whatif --sweep shows the predictions and their basis); to try one, measure them: record a few "
            "steps with the change and compare with tracekit diff" + extra)
