"""advise's findings sized by replay: each finding's saving is the job's replayed step as is minus its
replayed step with the finding's cause removed (commands/counterfactual.py), with the replay's error
beside it. docs/advise.md says what each cause removed means."""

from __future__ import annotations

from ..errors import TracekitError
from ..graph.split import split
from ..words import plural
from . import counterfactual as cf

SQL = ("sql/reports/_advise_cpu_leaves.sql; sql/reports/_advise_transfers.sql "
       "(graph_nodes, graph_edges: the replay, commands/counterfactual.py)")
LATE = {  # what: (cause, what the excess is, the change to try)
    "idle": ("host-bound", "its step thread idle (no op of its own running: asleep, loading data, blocked in "
             "code the profiler does not record)",
             "find what {who} wait{s} for on the CPU before {their} collectives (data loading, a sleep or a "
             "barrier, host contention): tracekit timeline RUN, tracekit report RUN why_late"),
    "work": ("CPU-bound", "its step thread running ops",
             "{who} run{s} more CPU work per step than the others: uneven work (data, sequence lengths, "
             "experts) or a slower or busier host; tracekit report RUN why_late names the ops"),
    "start": ("starts late", "",
              "{who} start{s} {their} steps late: the delay comes before the step (data loading, the previous "
              "step's tail, {their} host); profile more steps to see it"),
    "compute": ("GPU compute-bound", "its GPU computing",
                "{who} compute{s} longer per step: uneven work or a slower GPU (clocks, power, thermal); "
                "tracekit diff compares their kernels"),
}
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


def _finding(what, where, evidence, saving, change, confidence, err):
    return {"finding": what, "where": where, "evidence": evidence, "saving_ms": saving, "change": change,
            "confidence": confidence, "sql": SQL, "replay_error_pct": err}


def _why(run, late: list[int], excess: dict) -> str:
    """The ops that why_late finds longer on each late rank before its launches, when one explains a
    quarter of its excess or more."""
    from .. import sql_files as _sql

    (steps,) = run.sql("SELECT greatest(count(DISTINCT step), 1) AS n FROM steps").column("n").to_pylist()
    rows = run.sql(_sql.load("reports", "why_late").text, {"per_rank": 3}).to_pylist()
    said = []
    for r in late:
        top = next((w for w in rows if w["rank"] == r and w["kind"] != "lead-up"
                    and w["diff_ms"] >= 0.25 * excess[r] * steps), None)
        if top:
            said.append(f"rank {r} spends {top['diff_ms'] / steps:,.3f} ms a step more on {top['kind']} "
                        f"{top['name']} than the others before its launches")
    return ("; " + "; ".join(said)) if said else ""


def findings(run, rp) -> tuple[list[dict], str]:
    """The findings sized by replay, and a note: the replayed step and its error."""
    from ..graph.shared import too_big

    big = too_big(run)
    if big:
        raise TracekitError(big)
    if not run.sql("SELECT 1 FROM steps LIMIT 1").num_rows:  # said before the graph is read (10,000 ranks: minutes)
        raise TracekitError("the traces hold no ProfilerStep, and the replay times steps")
    sp = split(run)
    base = sp.replay()
    step = cf.job_step_ms(base)
    err = cf.replay_error_pct(base)
    out = []
    for what, (cause, excess_is, change) in LATE.items():
        late, excess = cf.late_ranks(sp, what, step)
        if not late:
            continue
        dur, gap = cf.at_pace(sp, what, late)
        saving = step - cf.job_step_ms(sp.replay(durations=dur, gaps=gap))
        if saving <= 0:
            continue
        names = ", ".join(map(str, late))
        named = _why(run, late, excess)
        who = f"rank{'s' if len(late) > 1 else ''} {names}"
        each = "; ".join(f"rank {r} {excess[r]:,.3f} ms" for r in late)
        out.append(_finding(
            f"late {who} ({cause})", who,
            (f"{excess_is} longer than the median rank's, per step: {each}" if what != "start" else
             f"its first profiled step starts later than the median rank's: {each}")
            + f"; replayed at the median rank's pace, the step ends {saving:,.3f} ms sooner",
            saving, change.format(who=who, s="" if len(late) > 1 else "s", their="their" if len(late) > 1 else "its")
            + named,
            "high" if saving >= 0.05 * step else "medium", err))
    for gi, grp in enumerate(sp.groups):
        hidden = step - cf.job_step_ms(sp.replay(durations=cf.comm_changed(sp, gi, "hidden")))
        if hidden <= 0.001:
            continue
        best = step - cf.job_step_ms(sp.replay(durations=cf.comm_changed(sp, gi, "best")))
        rank0 = min(grp["ranks"])
        role, how = _role(rp, rank0, grp)
        shown = f"{role}, {how}" if how else "role unknown: the trace and config do not say"
        ranks = ",".join(map(str, sorted(grp["ranks"])))
        change = CHANGE.get(role, CHANGE["unknown"])
        if best >= 0.5 * hidden:
            change = (f"its instances vary in speed: at the group's best measured bus bandwidth it would save "
                      f"{best:,.3f} ms (check what slows the others: link, contention, clocks); or " + change)
        out.append(_finding(
            f"exposed communication: {grp['collective']}", f"group {grp['group_label']} ({shown}), "
            f"{grp['collective']}, ranks {ranks}",
            f"replayed with its transfers hidden the step ends {hidden:,.3f} ms sooner (an upper bound of "
            f"overlapping it); at the group's best measured bus bandwidth, {best:,.3f} ms sooner",
            hidden, change, "medium", err))
    note = (f"savings by replay: the job's step (from one step's last work on any rank to the next one's, "
            f"mean over steps) replayed "
            f"{step:,.3f} ms, measured {cf.measured_job_step_ms(base):,.3f} ms"
            + (f", largest replay error {err:.2f} % (a rank's step)" if err is not None else "")
            + "; each saving is that replay minus the replay with the cause removed; they do not add up "
              "(fixing one changes what the others cost)")
    for f in out:
        f["saving_pct"] = 100 * f["saving_ms"] / step if step else None
    return out, note


def measure_instead(rp) -> str:
    """What to measure instead of a predicted plan or micro-batch saving (no validated step prediction)."""
    if rp is None or rp.plan is None:
        return ""
    extra = (f"; for the pipeline, {plural(2 * max(rp.shape.micro_batches, 1), 'micro-batch', 'micro-batches')}"
             if rp.plan.pp and rp.plan.pp > 1 and rp.shape is not None else "")
    return ("another plan or more micro-batches: no plan's predicted step interval (tracekit whatif --sweep) "
            "lies wholly below the measured step, so none is proposed; to try one, measure them: record a few "
            "steps with the change and compare with tracekit diff" + extra)
