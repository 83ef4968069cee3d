"""`tracekit whatif RUN [--tp 4 ...]`: a run's measured network, fitted, applied to its own or another plan.

1. Fit, per collective and role of group (DP/TP/PP: recorded config, group description, or the plan's
   group sizes), the transfer time of the clean matched instances (the fastest rank's duration, so waiting
   is out; sql/reports/_whatif_points.sql) as latency + bus traffic / bus bandwidth, where bus traffic =
   message bytes x nccl-tests' bus factor for the group's size. One law per (collective, role).
2. Predict with tracekit.analytic the collectives of one step of each pipeline stage under the plan (default:
   the run's own), and time them with the law; report the busiest rank (most bytes) per group and
   collective, beside what the run measured on its own busiest rank (sql/reports/_whatif_measured.sql).
3. Exposed (what the step pays): the transfer time x the share of that collective's kernel time the run
   left exposed (its role's, else the run's, where the run never ran it).

The note column says every extrapolation: a message size or group size outside the measured range, a
collective timed from another collective's bus bandwidth on the same role of group, a role never seen.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .. import sql_files as _sql
from ..analytic.roles import role_sizes
from ..comms.bandwidth import busbw_factor
from ..comms.buckets import human_bytes
from ..errors import TracekitError
from ..run_plan import RunPlan, resolve
from ..table_meta import FIRST_KEY, NOTE_KEY

MODELLED = {"allreduce", "allgather", "reduce_scatter", "broadcast", "send", "recv"}
IGNORED = {"barrier", "unknown"}  # tiny or unidentified: neither modelled nor a reason to refuse


def points(run, rp: RunPlan | None = None) -> dict[tuple[str, str], list]:
    """(collective, role, link kind) -> [(bus traffic bytes, transfer ns, message bytes, group size, source)].
    The link kind (intra-node, inter-node, mixed; unknown without hosts) keeps NVLink and the network apart:
    one role's groups can sit on one host or span several."""
    rp = resolve(run) if rp is None else rp
    pts: dict[tuple[str, str, str], list] = {}
    for r in run.sql(_sql.load("reports", "_whatif_points").text).to_pylist():
        coll = "sendrecv" if r["collective"] in ("send", "recv") else r["collective"]
        kind = rp.role(r["rank"], r["pg_name"], r["pg_desc"], r["group_size"], coll)
        f = busbw_factor(coll, r["group_size"])
        if f:
            pts.setdefault((coll, kind, r["link_kind"] or "unknown"), []).append(
                (r["bytes"] * f, r["transfer_ns"], r["bytes"], r["group_size"], r["source"]))
    return pts


def _quality(p: list) -> str | None:
    sizes = {b for _, _, b, _, _ in p}
    warn = []
    if len(sizes) == 1:
        warn.append("one message size: bandwidth only, no latency term")
    elif len(sizes) == 2:
        warn.append("two message sizes: a line through two points")
    by_size: dict[int, list] = {}
    for _, t, b, _, _ in p:
        by_size.setdefault(b, []).append(t)
    spread = max(max(ts) / min(ts) for ts in by_size.values())
    if spread >= 2:
        warn.append(f"times at one size vary {spread:.0f}x")
    if any(s == "one rank" for *_, s in p):
        warn.append("one rank traced: kernel times include waiting (an upper bound)")
    return "; ".join(warn) or None


def fit(run, pts: dict | None = None, rp: RunPlan | None = None) -> list[dict]:
    """Per (collective, role, link kind): latency (µs) and bus bandwidth (GB/s) of transfer = latency +
    traffic/bw, the measured ranges, and a warning where the fit is weak."""
    pts = points(run, rp) if pts is None else pts
    out = []
    for (coll, kind, link), p in sorted(pts.items()):
        x = np.array([a for a, *_ in p], dtype=float)
        y = np.array([b for _, b, *_ in p], dtype=float)
        if len(set(x)) >= 2:
            slope, intercept = np.polyfit(x, y, 1)
        else:
            slope, intercept = y.sum() / x.sum(), 0.0
        if slope <= 0 or intercept < 0:  # noise beats the size effect: one bandwidth, no latency,
            slope, intercept = y.sum() / x.sum(), 0.0  # which keeps the measured total time
        out.append({"collective": coll, "kind": kind, "link_kind": link, "points": len(p),
                    "sizes": len({b for _, _, b, _, _ in p}),
                    "latency_us": intercept / 1e3, "bus_gbps": 1.0 / slope,
                    "min_bytes": min(b for _, _, b, _, _ in p), "max_bytes": max(b for _, _, b, _, _ in p),
                    "min_ranks": min(n for *_, n, _ in p), "max_ranks": max(n for *_, n, _ in p),
                    "warning": _quality(p)})
    return out


def _steps(run) -> int:
    (n,) = run.sql("SELECT max(n) AS n FROM (SELECT count(DISTINCT step) AS n FROM steps GROUP BY rank)"
                   ).column("n").to_pylist()
    return n or 1


def measured(run, rp: RunPlan) -> dict[tuple[str, str], dict]:
    """(role, collective) -> the run's busiest rank's count, bytes, transfer and exposed ms per step."""
    per: dict[tuple[str, str, int], dict] = {}
    for r in run.sql(_sql.load("reports", "_whatif_measured").text).to_pylist():
        role = rp.role(r["rank"], r["pg_name"], r["pg_desc"], r["group_size"], r["collective"])
        a = per.setdefault((role, r["collective"], r["rank"]), dict.fromkeys(
            ("count", "bytes", "dur_ns", "exposed_ns", "transfer_ns", "matched"), 0))
        for k in a:
            a[k] = None if a[k] is None or r[k] is None else a[k] + r[k]
    steps = _steps(run)
    out: dict[tuple[str, str], dict] = {}
    for (role, coll, _rank), a in sorted(per.items()):
        best = out.get((role, coll))
        rank_key = (a["bytes"] or 0, a["count"], a["transfer_ns"] or 0, a["dur_ns"] or 0)
        if best is None or rank_key > best["_key"]:  # most bytes, then the longest transfer
            out[(role, coll)] = {
                "_key": rank_key, "count": a["count"] / steps,
                "bytes": None if a["bytes"] is None else a["bytes"] / steps,
                "transfer_ms": a["transfer_ns"] / steps / 1e6 if a["matched"] == a["count"] else None,
                "exposed_ms": a["exposed_ns"] / steps / 1e6, "dur_ns": a["dur_ns"], "exposed_ns": a["exposed_ns"]}
    return out


def coverage(run, experts: bool = False) -> str | None:
    """Why the model does not cover this run (a collective it never predicts), or None. A model with
    experts predicts all-to-alls (expert parallelism)."""
    rows = run.sql("SELECT collective, count(*) AS n FROM collectives GROUP BY ALL "
                   "ORDER BY n DESC").to_pylist()
    out = [r for r in rows if r["collective"] not in MODELLED | IGNORED | ({"alltoall"} if experts else set())]
    if not out:
        return None
    what = ", ".join(f"{r['n']:,} {r['collective']}" for r in out)
    return (f"the model covers GPT-style training (DP/ZeRO/FSDP, TP, PP); this run also runs {what} "
            "(an embedding or expert exchange, as in DLRM or MoE), which it does not predict")


def _law_for(laws: dict, coll: str, role: str, notes: set) -> dict | None:
    law = laws.get((coll, role))
    if law:
        return law
    same_role = [f for (c, k), f in laws.items() if k == role]
    same_coll = [f for (c, k), f in laws.items() if c == coll]
    if same_role:
        law = max(same_role, key=lambda f: f["points"])
        notes.add(f"{coll} never measured on {role}: timed from {law['collective']}'s bus bandwidth there")
    elif same_coll:
        law = max(same_coll, key=lambda f: f["points"])
        notes.add(f"no {role} group measured: the {coll} law of {law['kind']} groups")
    elif laws:
        law = max(laws.values(), key=lambda f: f["points"])
        notes.add(f"neither {coll} nor a {role} group measured: the {law['collective']} law of {law['kind']} groups")
    return law


def whatif(run, plan=None, *, config: dict | None = None, preset: str | None = None, model: dict | None = None,
           changes: dict | None = None, world: int | None = None) -> pa.Table:
    """Per group and collective, one step on the busiest rank: predicted count, bytes, transfer and exposed
    time under a plan, beside what the run measured. The plan: ``plan``, else the run's own (recorded,
    ``config``'s, or inferred) with ``changes`` (dp, tp, pp, zero, sequence_parallel, backend) over it.
    The model: ``preset``, else the recorded or ``config``'s, with ``model`` (field -> value) over it.
    ``world``: the number of ranks the plan is for (default: the run's)."""
    from ..analytic import check_fits
    from ..run_plan import plan_with

    ctx = context(run, config, preset, model)
    rp = ctx.rp
    if rp.shape is None:
        raise TracekitError("the traces record no model: pass --config FILE (JSON: {\"model\": {...}, "
                            "\"plan\": {...}}) or --preset NAME (with --layers/--hidden/--heads/--seq/--micro-batch/"
                            "--dtype to override)")
    world = world or rp.world
    target = plan or plan_with(rp.plan, world, changes, rp.shape)
    if target is None:
        raise TracekitError(rp.source)
    if rp.plan is None:  # the run's own plan unknown: the one given stands for it (which groups are which)
        rp.plan, rp.source = target, "plan as given (the trace does not tell its own)"
    check_fits(rp.shape, target, world)
    rows = predicted_rows(ctx, target)
    table = _table(rows)
    where = rp.source
    if rp.model_source.replace("model from ", "plan from ", 1) == rp.source:  # one source for both
        where = rp.source.replace("plan from ", "model and plan from ", 1)
    elif rp.model_source:
        where = f"{rp.model_source}; {rp.source}"
    note = (f"{where}; predicted: dp {target.dp} x tp {target.tp} x pp {target.pp}, zero {target.zero}"
            + (f", ep {target.ep}" if target.ep > 1 else ""))
    first = "group,collective,count,transfer_ms,measured_transfer_ms,exposed_ms,measured_exposed_ms,note"
    return table.replace_schema_metadata({NOTE_KEY: note.encode(), FIRST_KEY: first.encode()})


@dataclass
class Context:
    """What a prediction needs from a run, computed once: its plan and model, laws, measured figures."""
    rp: RunPlan
    laws: dict
    measured: dict


def context(run, config: dict | None = None, preset: str | None = None, model: dict | None = None) -> Context:
    """The run's plan and model (refused where the model does not cover the run), laws and measurements."""
    from ..run_plan import model_with

    rp = resolve(run, config)
    recorded_shape = rp.shape is not None
    rp.shape = model_with(rp.shape, preset, model)
    rp.model_source = _model_source(preset, config, recorded_shape, model)
    why = coverage(run, experts=bool(rp.shape and rp.shape.experts))
    if why:
        raise TracekitError(f"whatif cannot predict this run: {why}")
    laws: dict = {}  # per (collective, role), the law of the link kind measured most (one, on one host)
    for f in sorted(fit(run, rp=rp), key=lambda f: f["points"]):
        laws[(f["collective"], f["kind"])] = f
    return Context(rp, laws, measured(run, rp))


def _model_source(preset, config, recorded_shape: bool, model: dict | None) -> str:
    """Where the model comes from, for the note: a preset, --config or the recorded config, and the model
    flags over it (the plan's source is said apart: a preset has no plan)."""
    if preset:
        where = f"model: preset {preset}"
    elif config is not None:
        where = "model from --config"
    elif recorded_shape:
        where = "model from the config recorded in the traces"
    else:
        return ""
    flags = [f"--{k.replace('_', '-')} {v}" for k, v in (model or {}).items() if v is not None]
    return where + (f" with {', '.join(flags)}" if flags else "")


def predicted_rows(ctx: Context, target) -> list[dict]:
    """Per (group, collective): the prediction under ``target`` beside the measured figures."""
    from ..analytic import predict_rank

    rp, laws, meas = ctx.rp, ctx.laws, ctx.measured
    exp_share = _exposed_share(meas)
    size = role_sizes(target)
    acc: dict[tuple[str, str], dict] = {}
    for stage in range(target.pp):
        per = {}
        for e in predict_rank(rp.shape, target, stage * target.dp * target.tp):
            notes: set = set()
            coll = "sendrecv" if e.collective in ("send", "recv") else e.collective
            law = _law_for(laws, coll, e.group, notes)
            msg = e.bytes / e.count
            t = None
            if law is None:
                notes.add("no time: the run has no clean matched instance with a size to fit a law to")
            else:
                if not law["min_bytes"] <= msg <= law["max_bytes"]:
                    notes.add(f"extrapolated: {human_bytes(int(msg))} messages, measured "
                              f"{human_bytes(law['min_bytes'])}-{human_bytes(law['max_bytes'])}")
                n = 2 if coll == "sendrecv" else size[e.group]
                if coll != "sendrecv" and not law["min_ranks"] <= n <= law["max_ranks"]:
                    notes.add(f"extrapolated: groups of {n} ranks, measured "
                              f"{law['min_ranks']:.0f}-{law['max_ranks']:.0f}")
                if law["warning"]:
                    notes.add(f"weak law: {law['warning']}")
                f = busbw_factor(e.collective, size[e.group]) or 0.0
                t = e.count * law["latency_us"] / 1e3 + e.bytes * f / law["bus_gbps"] / 1e6
            if e.group == "EP":
                notes.add("routing decides each rank's share of the all-to-alls: predicted is the mean per rank")
            prev = per.get((e.group, e.collective))
            if prev is not None:  # several terms of one group and collective (MoE: counts, then tokens)
                t = None if t is None or prev["transfer_ms"] is None else t + prev["transfer_ms"]
                notes |= prev["notes"]
                e = type(e)(e.collective, e.group, e.count + prev["count"], e.bytes + prev["bytes"], e.why)
            per[(e.group, e.collective)] = {"count": e.count, "bytes": e.bytes, "transfer_ms": t, "notes": notes}
        for k, v in per.items():
            if k not in acc or (v["bytes"], v["count"]) > (acc[k]["bytes"], acc[k]["count"]):
                acc[k] = v
    rows = []
    for key in sorted(set(acc) | set(meas)):
        p, m = acc.get(key), meas.get(key, {})
        notes = set(p["notes"]) if p else {"measured, not in the model"}
        share = exp_share.get(key, exp_share.get(key[0], exp_share.get(None)))
        if p and key not in meas:
            notes.add("not run by the measured plan: exposed share of " + ("its role" if key[0] in exp_share
                                                                          else "the whole run"))
        t = p["transfer_ms"] if p else None
        rows.append({"group": key[0], "collective": key[1], "count": p["count"] if p else None,
                     "measured_count": m.get("count"), "bytes": p["bytes"] if p else None,
                     "measured_bytes": m.get("bytes"), "transfer_ms": t, "measured_transfer_ms": m.get("transfer_ms"),
                     "exposed_ms": None if t is None or share is None else t * share,
                     "measured_exposed_ms": m.get("exposed_ms"), "note": "; ".join(sorted(notes)) or None})
    return rows


def _exposed_share(meas: dict) -> dict:
    """Exposed share of kernel time per (role, collective), per role, and for the whole run (None)."""
    sums: dict = {}
    for (role, coll), m in meas.items():
        for k in ((role, coll), role, None):
            a = sums.setdefault(k, [0.0, 0.0])
            a[0] += m["exposed_ns"]
            a[1] += m["dur_ns"]
    return {k: e / d for k, (e, d) in sums.items() if d > 0}


def _table(rows: list[dict]) -> pa.Table:
    """Counts and bytes as integers where every value is one (averages over steps may not be)."""
    def typ(col):
        vals = [r[col] for r in rows if r[col] is not None]
        return pa.int64() if all(float(v).is_integer() for v in vals) else pa.float64()

    for col in ("count", "measured_count", "bytes", "measured_bytes"):
        t = typ(col)
        for r in rows:
            if r[col] is not None and t == pa.int64():
                r[col] = int(r[col])
    schema = pa.schema([("group", pa.string()), ("collective", pa.string()), ("count", typ("count")),
                        ("measured_count", typ("measured_count")), ("bytes", typ("bytes")),
                        ("measured_bytes", typ("measured_bytes")), ("transfer_ms", pa.float64()),
                        ("measured_transfer_ms", pa.float64()), ("exposed_ms", pa.float64()),
                        ("measured_exposed_ms", pa.float64()), ("note", pa.string())])
    return pa.Table.from_pylist(rows, schema=schema)


def plans_that_fit(shape, world: int, like) -> list:
    """Every dp x tp x pp = world that the model allows (heads % tp, layers % pp), with ``like``'s zero
    and backend, without sequence parallelism."""
    from ..analytic import Plan, check_fits

    out = []
    for tp in range(1, world + 1):
        for pp in range(1, world // tp + 1):
            if world % (tp * pp):
                continue
            p = Plan(dp=world // (tp * pp), tp=tp, pp=pp, zero=like.zero, backend=like.backend)
            try:
                check_fits(shape, p, world)
            except TracekitError:
                continue
            out.append(p)
    return out


def exposed_total(rows: list[dict]) -> float | None:
    """The step's predicted exposed communication (busiest rank per group and collective), ms; None when
    some predicted collective has no time."""
    vals = [r["exposed_ms"] for r in rows if r["count"] is not None]
    return None if any(v is None for v in vals) else sum(vals)
