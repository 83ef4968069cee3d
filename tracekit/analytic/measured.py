"""What a run measured that the step model reads (tracekit.analytic.calibrate): its step per profiled step,
its ranks per host, and each rank's parts of the step (sql/reports/_whatif_parts.sql). The job's step
(``job_steps_ms``, ``job_step_ms``) is read here for whatif and advise alike, from the one view that
defines it (sql/views/job_steps.sql); diff reads that view per step."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from .. import sql_files as _sql


@dataclass
class Measured:
    step_ms: float | None
    """the job's step: median over profiled steps of job_steps (the longest ProfilerStep over ranks), ms"""
    steps_ms: list[float]
    """the job's step per profiled step (job_steps.dur_ns), ms"""
    ranks_per_host: int
    """most ranks on one host"""
    parts: list[dict]
    """per rank: _whatif_parts' row"""


def job_steps_ms(run) -> list[float]:
    """The job's step per profiled step, in step order (sql/views/job_steps.sql), ms; steps of 0 ns left out."""
    rows = run.sql("SELECT step, dur_ns AS ns FROM job_steps ORDER BY step").to_pylist()
    return [r["ns"] / 1e6 for r in rows if r["ns"]]


def job_step_ms(steps_ms: list[float]) -> float | None:
    """The job's step over its profiled steps: the median (a burst of load in one step left out), ms; None
    without a step."""
    return statistics.median(steps_ms) if steps_ms else None


def measure(run) -> Measured:
    steps = job_steps_ms(run)
    (hosts,) = run.sql("SELECT max(n) AS n FROM (SELECT count(*) AS n FROM traces GROUP BY host_name)"
                       ).column("n").to_pylist()
    parts = run.sql(_sql.load("reports", "_whatif_parts").text).to_pylist()
    return Measured(job_step_ms(steps), steps, hosts or 1, parts)
