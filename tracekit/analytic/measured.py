"""What a run measured that the step model reads (tracekit.analytic.calibrate): its step per profiled step,
its ranks per host, and each rank's parts of the step (sql/reports/_whatif_parts.sql)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from .. import sql_files as _sql


@dataclass
class Measured:
    step_ms: float | None
    """median over profiled steps of the longest ProfilerStep over ranks, ms"""
    steps_ms: list[float]
    """that longest ProfilerStep, per profiled step, ms"""
    ranks_per_host: int
    """most ranks on one host"""
    parts: list[dict]
    """per rank: _whatif_parts' row"""


def measure(run) -> Measured:
    rows = run.sql("SELECT step, max(dur_ns) AS ns FROM steps WHERE step IS NOT NULL GROUP BY step "
                   "ORDER BY step").to_pylist()
    steps = [r["ns"] / 1e6 for r in rows if r["ns"]]
    (hosts,) = run.sql("SELECT max(n) AS n FROM (SELECT count(*) AS n FROM traces GROUP BY host_name)"
                       ).column("n").to_pylist()
    parts = run.sql(_sql.load("reports", "_whatif_parts").text).to_pylist()
    return Measured(statistics.median(steps) if steps else None, steps, hosts or 1, parts)
