"""What whatif predicts from: the run's measured points and fitted laws, its plan and model (Context), each
stage's collectives under a plan timed by the laws, and the plans that fit a world. tracekit.commands.whatif
(the command) and whatif_step (the step) build on it."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from .. import sql_files as _sql
from ..analytic import netlaw
from ..analytic.estimate import Estimate
from ..analytic.roles import role_sizes
from ..comms.bandwidth import busbw_factor
from ..errors import TracekitError
from ..run_plan import RunPlan, resolve

MODELLED = {"allreduce", "allgather", "reduce_scatter", "broadcast", "send", "recv"}
IGNORED = {"barrier", "unknown"}  # tiny or unidentified: neither modelled nor a reason to refuse


def points(run, rp: RunPlan | None = None) -> dict[tuple[str, str], list]:
    """(collective, role, link kind) -> [(bus traffic bytes, transfer ns, message bytes, group size, source,
    step)].
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
                (r["bytes"] * f, r["transfer_ns"], r["bytes"], r["group_size"], r["source"], r["step"]))
    return pts


def _quality(p: list) -> str | None:
    by_size: dict[int, list] = {}
    for _, t, b, *_ in p:
        by_size.setdefault(b, []).append(t)
    warn = []
    spread = max(max(ts) / min(ts) for ts in by_size.values())
    if spread >= 2:
        warn.append(f"times at one size vary {spread:.0f}x")
    if any(s == "one rank" for *_, s, _ in p):
        warn.append("one rank traced: kernel times include waiting (an upper bound)")
    return "; ".join(warn) or None


def laws_of(pts: dict) -> dict[tuple[str, str, int], tuple[netlaw.Law, dict]]:
    """(collective, link kind, group size) -> (its law, what it was fitted from), over every role."""
    by: dict[tuple[str, str, int], list] = {}
    roles: dict[tuple[str, str, int], set] = {}
    for (coll, role, link), p in pts.items():
        for q in p:
            key = (coll, link, 2 if coll == "sendrecv" else int(q[3]))
            by.setdefault(key, []).append(q)
            roles.setdefault(key, set()).add(role)
    out = {}
    for key, p in by.items():
        law = netlaw.fit_law([(x, t, b, st) for x, t, b, _, _, st in p])
        if law is not None:
            out[key] = (law, {"roles": sorted(roles[key]), "warning": _quality(p)})
    return out


def fit(run, pts: dict | None = None, rp: RunPlan | None = None) -> list[dict]:
    """Per (collective, role, link kind): the law alpha + traffic / beta (latency_us, bus_gbps), how it was
    fitted (law), the measured ranges, and a warning where the measurements are noisy."""
    pts = points(run, rp) if pts is None else pts
    out = []
    for (coll, kind, link), p in sorted(pts.items()):
        law = netlaw.fit_law([(x, t, b, st) for x, t, b, _, _, st in p])
        if law is None:
            continue
        out.append({"collective": coll, "kind": kind, "link_kind": link, "points": len(p), "sizes": law.sizes,
                    "latency_us": law.alpha_ns / 1e3,
                    "bus_gbps": law.bus_gbps if law.bus_gbps is not None else float("inf"),
                    "law": law.label(), "lo": law.spread.lo, "hi": law.spread.hi,
                    "min_bytes": min(q[2] for q in p), "max_bytes": max(q[2] for q in p),
                    "min_ranks": min(q[3] for q in p), "max_ranks": max(q[3] for q in p),
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


def _link_of(ctx: "Context", role: str) -> str:
    """The link kind a role's groups were measured on, else the one the run measured most."""
    kinds = ctx.role_links.get(role) or ctx.role_links.get(None) or ["unknown"]
    return kinds[0]


BORROWED_WIDEN = 2.0  # a law borrowed from another collective: its interval widens this much each way. One
# collective's algorithm is not another's (a ring, a tree, a reduction on the CPU): on the shipped Gloo sweep
# the 2-rank all-reduce runs at 1/2 to 1/3 of send/recv's bus bandwidth


def _law_for(ctx: "Context", coll: str, role: str, n: int, notes: set) -> tuple[netlaw.Law | None, str, bool]:
    """The law that times ``coll`` on a ``role`` group of ``n`` ranks, where it was measured, and whether it
    is ``coll``'s own (measured on that collective, of any group size; not another's, not the prior)."""
    law, where, key = _pick_law(ctx, coll, role, n, notes)
    if key is not None and ctx.netlaws[key][1]["warning"]:
        notes.add(f"law's measurements: {ctx.netlaws[key][1]['warning']}")
    return law, where, key is not None and key[0] == coll


def widen_borrowed(law: netlaw.Law, own: bool, est: Estimate, notes: set) -> Estimate:
    """A prediction, its interval widened BORROWED_WIDEN each way where its law is another collective's
    (not ``own``, not the prior), said in ``notes``."""
    if own or law.kind == "prior":
        return est
    notes.add(f"another collective's law: the interval widened {BORROWED_WIDEN:g}x each way")
    return est.widen(BORROWED_WIDEN)


def _pick_law(ctx: "Context", coll: str, role: str, n: int, notes: set):
    link = _link_of(ctx, role)
    laws = ctx.netlaws
    where = f"measured in {ctx.run_name}"
    if (coll, link, n) in laws:
        return laws[(coll, link, n)][0], f"{coll}, {n} ranks, {link}, {where}", (coll, link, n)
    same = sorted((k for k in laws if k[0] == coll and k[1] == link), key=lambda k: abs(k[2] - n))
    if same:
        k = same[0]
        notes.add(f"extrapolated: groups of {n} ranks timed by the {coll} law of {k[2]} (bus bandwidth)")
        return laws[k][0], f"{coll}, {k[2]} ranks, {link}, {where}", k
    group = sorted((k for k in laws if k[1] == link and k[2] == n), key=lambda k: -laws[k][0].points)
    if group:  # the same group measured, another collective: its bus bandwidth
        k = group[0]
        notes.add(f"{coll} never measured: timed by the {k[0]} law of {k[2]} ranks ({k[1]})")
        return laws[k][0], f"{k[0]}, {k[2]} ranks, {k[1]}, {where}", k
    if ctx.prior_gbps and link in ("intra-node", "unknown"):
        notes.add(f"{coll} on {n} ranks not measured: the prior")
        return netlaw.prior_law(ctx.prior_gbps), f"prior ({ctx.gpu}): not measured", None
    other = sorted((k for k in laws if k[1] == link), key=lambda k: (abs(k[2] - n), -laws[k][0].points))
    other = other or sorted(laws, key=lambda k: -laws[k][0].points)
    if other:
        k = other[0]
        notes.add(f"{coll} never measured: timed by the {k[0]} law of {k[2]} ranks ({k[1]})")
        return laws[k][0], f"{k[0]}, {k[2]} ranks, {k[1]}, {where}", k
    return None, "no law", None


@dataclass
class Context:
    """What a prediction needs from a run, computed once: its plan and model, laws, measurements."""
    rp: RunPlan
    laws: dict  # (collective, role) -> fit()'s row, of the link kind measured most (advise reads these)
    measured: dict
    run_name: str = ""
    netlaws: dict = field(default_factory=dict)  # (collective, link kind, group size) -> (Law, info): laws_of
    role_links: dict = field(default_factory=dict)
    prior_gbps: float | None = None
    gpu: str = ""
    meas: object = None  # tracekit.analytic.measured.Measured
    cores: int | None = None
    src_shape: object = None  # the model the run ran (before model flags), which calibrates its rates
    cpu_only: bool = False  # CPU training (Gloo collectives, no GPU kernel): its compute is CPU ops, the
    # framework's work among them; a GPU trace without its kernels is not


def context(run, config: dict | None = None, preset: str | None = None, model: dict | None = None,
            cores: int | None = None) -> Context:
    """The run's plan and model (refused where the model does not cover the run), laws and measurements."""
    from ..analytic.links import nvlink_gbps
    from ..analytic.measured import measure
    from ..run_plan import model_with

    rp = resolve(run, config)
    own = rp.shape  # the model the run trained: the traces' recorded config, else --config's; None: neither
    rp.shape = model_with(own, preset, model)  # the model predicted: --preset, else the run's, flags over it
    rp.model_source = _model_source(preset, config, own is not None, model)
    # The run's rates are calibrated on the model it trained, so a --preset or model flags over a run that
    # says its model are the target, its compute rescaled from that model's work (both say so the same way:
    # source_* columns, "compute extrapolated"). Only where the run says none is the one given (preset and
    # flags) taken as the run's own (_model_source's note says so).
    src_shape = own if own is not None else rp.shape
    why = coverage(run, experts=bool(rp.shape and rp.shape.experts))
    if why:
        raise TracekitError(f"whatif cannot predict this run: {why}")
    pts = points(run, rp)
    links: dict = {}
    for (_coll, role, link), _p in sorted(pts.items(), key=lambda kv: -len(kv[1])):
        for key in (role, None):
            if link not in links.setdefault(key, []):
                links[key].append(link)
    (gpu,) = run.sql("SELECT any_value(gpu_name) AS g FROM traces").column("g").to_pylist()
    laws: dict = {}
    for f in sorted(fit(run, pts, rp), key=lambda f: f["points"]):
        laws[(f["collective"], f["kind"])] = f
    (cpu,) = run.sql("SELECT (SELECT count(*) FROM (SELECT 1 FROM gpu_kernels LIMIT 1)) = 0 AND (SELECT "
                     "count(*) FROM (SELECT 1 FROM _gloo_collectives LIMIT 1)) > 0 AS c").column("c").to_pylist()
    return Context(rp, laws, measured(run, rp), run.name, laws_of(pts), links, nvlink_gbps(gpu), gpu or "",
                   measure(run), cores, src_shape, bool(cpu))


def _model_source(preset, config, recorded_shape: bool, model: dict | None) -> str:
    """Where the model comes from, for the note: a preset, --config or the recorded config, and the model
    flags over it (the plan's source is said apart: a preset has no plan)."""
    if preset:
        where = f"model: preset {preset}"
        if not recorded_shape and config is None:  # (a ResNet's run ranked 56 GPT plans without a word)
            where += (" (the traces record no model: the preset is taken as what this run trained and the work "
                      "measured as its; if the run trained another model, these are not its steps)")
    elif config is not None:
        where = "model from --config"
    elif recorded_shape:
        where = "model from the config recorded in the traces"
    else:
        return ""
    flags = [f"--{k.replace('_', '-')} {v}" for k, v in (model or {}).items() if v is not None]
    return where + (f" with {', '.join(flags)}" if flags else "")


def stage_collectives(ctx: Context, target, shape=None) -> list[dict]:
    """Per pipeline stage, group and collective: count, bytes and transfer time (an Estimate, ms) under
    ``target``, on a representative rank of each stage."""
    from ..analytic import predict_rank

    size = role_sizes(target)
    out = []
    for stage in range(target.pp):
        per: dict = {}
        for e in predict_rank(shape or ctx.rp.shape, target, stage * target.dp * target.tp):
            notes: set = set()
            coll = "sendrecv" if e.collective in ("send", "recv") else e.collective
            n = 2 if coll == "sendrecv" else size[e.group]
            law, where, own = _law_for(ctx, coll, e.group, n, notes)
            t = None
            if law is None:
                notes.add("no time: the run has no clean matched instance with a size to fit a law to")
            else:
                f = busbw_factor(e.collective, n) or 0.0
                ns, more = netlaw.predict(law, e.count, e.bytes / e.count, e.bytes * f)
                notes |= set(more)
                ns = widen_borrowed(law, own, ns, notes)
                if law.kind != "fit":
                    notes.add(f"law: {law.label()}")
                t = ns.over(1e6)
                notes.add(f"law: {where}")
            if e.group == "EP":
                notes.add("routing decides each rank's share of the all-to-alls: predicted is the mean per rank")
            prev = per.get((e.group, e.collective))
            if prev is not None:  # several terms of one group and collective (MoE: counts, then tokens)
                t = None if t is None or prev["t"] is None else t + prev["t"]
                notes |= prev["notes"]
                own = own and prev["own_law"]
                e = type(e)(e.collective, e.group, e.count + prev["count"], e.bytes + prev["bytes"], e.why)
            per[(e.group, e.collective)] = {"stage": stage, "group": e.group, "collective": e.collective,
                                            "count": e.count, "bytes": e.bytes, "t": t, "notes": notes,
                                            "own_law": own}
        out.extend(per.values())
    return out


def predicted_rows(ctx: Context, target, colls: list[dict] | None = None) -> list[dict]:
    """Per (group, collective): the prediction under ``target`` (the busiest stage) beside the run's figures."""
    meas = ctx.measured
    exp_share = _exposed_share(meas)
    acc: dict[tuple[str, str], dict] = {}
    for v in colls if colls is not None else stage_collectives(ctx, target):
        k = (v["group"], v["collective"])
        if k not in acc or (v["bytes"], v["count"]) > (acc[k]["bytes"], acc[k]["count"]):
            acc[k] = v
    rows = []
    for key in sorted(set(acc) | set(meas)):
        p, m = acc.get(key), meas.get(key, {})
        notes = set(p["notes"]) if p else {"measured in the run; the predicted plan runs none"}
        share, why = share_for(exp_share, key)
        if p and key not in meas:
            notes.add("not run by the measured plan: " + why)
        t = p["t"].value if p and p["t"] else None
        rows.append({"group": key[0], "collective": key[1], "count": p["count"] if p else None,
                     "measured_count": m.get("count"), "bytes": p["bytes"] if p else None,
                     "measured_bytes": m.get("bytes"), "transfer_ms": t, "measured_transfer_ms": m.get("transfer_ms"),
                     "exposed_ms": None if t is None or share is None else t * share,
                     "measured_exposed_ms": m.get("exposed_ms"), "note": "; ".join(sorted(notes)) or None})
    return rows


def share_for(exp_share: dict, key: tuple) -> tuple[float | None, str]:
    """The share of a (role, collective)'s transfer left exposed, and where it comes from: the run's own
    for that collective of that role, else for the role; a tensor-parallel collective the run has no TP to
    measure is exposed in full (it sits between a layer's matmuls: nothing to hide behind, unless async
    TP, which a run with TP would show); else the whole run's."""
    if key in exp_share:
        return exp_share[key], "exposed share of the collective"
    if key[0] in exp_share:
        return exp_share[key[0]], "exposed share of its role"
    if key[0] == "TP":
        return 1.0, "tensor-parallel collectives sit between a layer's matmuls: exposed in full"
    return exp_share.get(None), "exposed share of the whole run"


def _exposed_share(meas: dict) -> dict:
    """Exposed share of kernel time per (role, collective), per role, and for the whole run (None)."""
    sums: dict = {}
    for (role, coll), m in meas.items():
        for k in ((role, coll), role, None):
            a = sums.setdefault(k, [0.0, 0.0])
            a[0] += m["exposed_ns"]
            a[1] += m["dur_ns"]
    return {k: e / d for k, (e, d) in sums.items() if d > 0}


def rows_table(rows: list[dict], source: bool) -> pa.Table:
    """Counts and bytes as integers where every value is one (averages over steps may not be). ``source``:
    the run's figures are another plan's, named source_* (not measured_*: nobody measured this plan)."""
    for r in rows:
        for c in ("count", "measured_count", "bytes", "measured_bytes"):
            r.setdefault(c, None)

    def typ(col):
        vals = [r[col] for r in rows if r[col] is not None]
        return pa.int64() if all(float(v).is_integer() for v in vals) else pa.float64()

    for col in ("count", "measured_count", "bytes", "measured_bytes"):
        t = typ(col)
        for r in rows:
            if r[col] is not None and t == pa.int64():
                r[col] = int(r[col])
    cols = [("group", pa.string()), ("collective", pa.string()), ("step_ms", pa.float64()),
            ("step_ms_lo", pa.float64()), ("step_ms_hi", pa.float64()), ("measured_step_ms", pa.float64()),
            ("count", typ("count")), ("measured_count", typ("measured_count")), ("bytes", typ("bytes")),
            ("measured_bytes", typ("measured_bytes")), ("transfer_ms", pa.float64()),
            ("measured_transfer_ms", pa.float64()), ("exposed_ms", pa.float64()),
            ("measured_exposed_ms", pa.float64()), ("note", pa.string())]
    for r in rows:
        for c, _ in cols:
            r.setdefault(c, None)
    if source:
        rows = [{k.replace("measured_", "source_"): v for k, v in r.items()} for r in rows]
        cols = [(c.replace("measured_", "source_"), t) for c, t in cols]
    return pa.Table.from_pylist(rows, schema=pa.schema(cols))


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
