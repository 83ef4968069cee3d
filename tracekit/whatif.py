"""`tracekit whatif RUN --tp 4 --dp 8 ...`: a run's measured network, fitted, applied to another plan.

1. Fit, per collective and kind of group (the group's role DP/TP/PP from its description or the recorded
   config), the transfer time of the clean matched instances (the fastest rank's duration, so waiting is
   out) as latency + bus traffic / bus bandwidth, where bus traffic = message bytes x nccl-tests' bus
   factor for the group's size. One law per (collective, kind) covers every group size and message size.
2. Predict with tracekit.model the collectives of one step of each rank under the other plan (the run's
   recorded model), and their time from the fitted law.
3. Exposed: the run's measured share of communication hidden behind compute is assumed to stay.

Everything outside what was measured is said in the `note` column: a message size outside the measured
range (extrapolated), a kind of group never seen (the collective's law from another kind), a collective
never measured (no time).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .comms.bandwidth import busbw_factor
from .errors import TracekitError

FIT_SQL = """
SELECT i.collective, c.pg_name, coalesce(nullif(c.pg_desc, ''), 'unknown') AS kind, i.bytes,
       i.expected_ranks AS n, i.transfer_ns
FROM collective_instances i
JOIN (SELECT instance_key, min(rank) AS rank, arg_min(event_index, rank) AS event_index
      FROM collective_waits GROUP BY instance_key) w USING (instance_key)
JOIN _collectives c ON c.rank = w.rank AND c.event_index = w.event_index
WHERE i.status = 'clean' AND i.bytes > 0 AND i.transfer_ns > 0 AND i.expected_ranks IS NOT NULL
  AND NOT c.tracekit_marker
"""


def _roles(run) -> dict[str, str]:
    """Process group name -> role (DP, TP, PP) from the configs the traces recorded, if any."""
    from .validate import recorded_configs

    out = {}
    for cfg in recorded_configs(run).values():
        for role, name in (cfg.get("plan", {}).get("groups") or {}).items():
            out[str(name)] = role
    return out


def points(run) -> dict[tuple[str, str], list]:
    """(collective, kind) -> [(bus traffic bytes, transfer ns, message bytes)] of the clean instances."""
    pts: dict[tuple[str, str], list] = {}
    roles = _roles(run)
    for r in run.sql(FIT_SQL).to_pylist():
        kind = roles.get(str(r["pg_name"]), r["kind"])
        f = busbw_factor(r["collective"], r["n"])
        if f:
            pts.setdefault((r["collective"], kind), []).append((r["bytes"] * f, r["transfer_ns"], r["bytes"]))
    return pts


def fit(run, pts: dict | None = None) -> list[dict]:
    """Per (collective, kind): latency (µs) and bus bandwidth (GB/s) of transfer = latency + traffic/bw."""
    pts = points(run) if pts is None else pts
    out = []
    for (coll, kind), p in sorted(pts.items()):
        x = np.array([a for a, _, _ in p], dtype=float)
        y = np.array([b for _, b, _ in p], dtype=float)
        if len(set(x)) >= 2:
            slope, intercept = np.polyfit(x, y, 1)
        else:
            slope, intercept = y.sum() / x.sum(), 0.0
        if slope <= 0 or intercept < 0:  # noise beats the size effect: one bandwidth, no latency,
            slope, intercept = y.sum() / x.sum(), 0.0  # which keeps the measured total time
        out.append({"collective": coll, "kind": kind, "points": len(p), "latency_us": intercept / 1e3,
                    "bus_gbps": 1.0 / slope, "min_bytes": min(b for _, _, b in p), "max_bytes": max(b for _, _, b in p)})
    return out


def whatif(run, plan) -> pa.Table:
    """Per group and collective, one step averaged over ranks: count, bytes, predicted time and exposed."""
    from .model import from_recorded, predict_rank
    from .validate import recorded_config

    shape, _ = from_recorded(recorded_config(run))
    laws = {(f["collective"], f["kind"]): f for f in fit(run)}
    if not laws:
        raise TracekitError(f"{run.name}: no clean matched collective instance with a size to fit a law to "
                            "(one rank, or no sizes); see tracekit doctor")
    by_coll: dict[str, list] = {}
    for f in laws.values():
        by_coll.setdefault(f["collective"], []).append(f)
    hidden = run.sql("SELECT CAST(sum(overlap_ns) AS DOUBLE) / nullif(CAST(sum(comm_ns) AS DOUBLE), 0) AS h "
                     "FROM comm_overlap WHERE step IS NULL").to_pylist()[0]["h"] or 0.0
    size = {"DP": plan.dp, "TP": plan.tp, "PP": plan.pp}
    acc: dict[tuple[str, str], dict] = {}
    for rank in range(plan.world):
        for e in predict_rank(shape, plan, rank):
            row = acc.setdefault((e.group, e.collective), {"count": 0, "bytes": 0, "time_ns": 0.0, "notes": set()})
            row["count"] += e.count
            row["bytes"] += e.bytes
            measured_as = "sendrecv" if e.collective in ("send", "recv") else e.collective  # p2p: one instance
            law = laws.get((measured_as, e.group))
            if law is None and measured_as in by_coll:
                law = max(by_coll[measured_as], key=lambda f: f["points"])
                row["notes"].add(f"no {e.group} group measured: the law of {law['kind']} groups")
            if law is None:
                row["notes"].add(f"{e.collective} never measured: no time")
                row["time_ns"] = None
                continue
            msg = e.bytes / e.count
            if not law["min_bytes"] <= msg <= law["max_bytes"]:
                row["notes"].add(f"extrapolated: {msg:,.0f} B messages, measured {law['min_bytes']:,}"
                                 f"-{law['max_bytes']:,} B")
            f = busbw_factor(e.collective, size[e.group]) or 0.0
            if row["time_ns"] is not None:
                row["time_ns"] += e.count * (law["latency_us"] * 1e3 + msg * f / law["bus_gbps"])
    rows = []
    for (group, coll), r in sorted(acc.items()):
        t = None if r["time_ns"] is None else r["time_ns"] / plan.world / 1e6
        rows.append({"group": group, "collective": coll, "count": r["count"] / plan.world,
                     "bytes": r["bytes"] / plan.world, "time_ms": t,
                     "exposed_ms": None if t is None else t * (1 - hidden),
                     "note": "; ".join(sorted(r["notes"])) or None})
    return pa.Table.from_pylist(rows, schema=pa.schema([
        ("group", pa.string()), ("collective", pa.string()), ("count", pa.float64()), ("bytes", pa.float64()),
        ("time_ms", pa.float64()), ("exposed_ms", pa.float64()), ("note", pa.string())]))
