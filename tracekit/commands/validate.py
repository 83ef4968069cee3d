"""Predicted (tracekit.analytic) against measured (the collectives view) per collective and group."""

from __future__ import annotations

import pyarrow as pa

from ..analytic import from_recorded, predict_rank
from ..analytic.recorded import recorded_config, recorded_configs
from ..analytic.roles import group_role


def validate(run, config: dict | None = None) -> pa.Table:
    per_rank = {} if config else recorded_configs(run)  # process group names are rank-local
    cfg = config or recorded_config(run, per_rank)
    shape, plan = from_recorded(cfg)
    groups_of = {r: c.get("plan", {}).get("groups", {}) for r, c in per_rank.items()}
    default_groups = cfg.get("plan", {}).get("groups", {})
    ranks = run.ranks
    (steps,) = run.sql("SELECT count(DISTINCT step) AS n FROM steps").column("n").to_pylist()
    steps = steps or cfg.get("steps", 1)
    predicted: dict[tuple[str, str], list] = {}
    for r in ranks:
        for e in predict_rank(shape, plan, r):
            acc = predicted.setdefault((e.collective, e.group), [0, 0, e.why])
            acc[0] += e.count * steps
            acc[1] += e.bytes * steps
            if e.why not in acc[2].split("; "):  # several terms of one collective and group (MoE)
                acc[2] += "; " + e.why
    measured: dict[tuple[str, str], list] = {}
    unsized = 0
    for row in run.sql("SELECT rank, collective, pg_name, pg_desc, group_size, count(*) AS n, "
                       "CAST(sum(bytes) AS BIGINT) AS b, count(*) - count(bytes) AS nb "
                       "FROM collectives GROUP BY ALL").to_pylist():
        named = {str(v): k for k, v in groups_of.get(row["rank"], default_groups).items()}
        role = group_role(named.get(str(row["pg_name"])) if row["pg_name"] is not None else None,
                          row["pg_desc"], row["group_size"], row["collective"], plan)
        key = (row["collective"], role)
        acc = measured.setdefault(key, [0, 0])
        acc[0] += row["n"]
        acc[1] += row["b"] or 0
        unsized += row["nb"]
    out = []
    for key in sorted(set(predicted) | set(measured)):
        p = predicted.get(key, [0, 0, "not in the model"])
        m = measured.get(key, [0, 0])
        note = p[2]
        if key not in measured:
            note = "predicted but not measured: " + note
        elif key not in predicted:
            note = "measured but not predicted (not part of the model)"
        out.append({"collective": key[0], "group": key[1], "predicted_count": p[0], "measured_count": m[0],
                    "count_error_pct": _err(m[0], p[0]), "predicted_bytes": p[1], "measured_bytes": m[1],
                    "bytes_error_pct": _err(m[1], p[1]), "note": note})
    if unsized:
        out.append({"collective": "(any)", "group": "", "predicted_count": 0, "measured_count": unsized,
                    "count_error_pct": None, "predicted_bytes": 0, "measured_bytes": 0, "bytes_error_pct": None,
                    "note": f"{unsized} measured collectives have no size in the trace (see docs/definitions.md)"})
    return pa.Table.from_pylist(out, schema=pa.schema([
        ("collective", pa.string()), ("group", pa.string()), ("predicted_count", pa.int64()),
        ("measured_count", pa.int64()), ("count_error_pct", pa.float64()), ("predicted_bytes", pa.int64()),
        ("measured_bytes", pa.int64()), ("bytes_error_pct", pa.float64()), ("note", pa.string())]))


def _err(measured: int, predicted: int) -> float | None:
    if predicted == 0:
        return None if measured == 0 else float("inf")
    return 100.0 * (measured - predicted) / predicted
