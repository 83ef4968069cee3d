"""Reports: one module per report, each a Report over its .sql file, listed in one explicit registry."""

from __future__ import annotations

import pyarrow as pa

from ..errors import TracekitError
from . import breakdown, collectives, doctor, exposed, identity, overlap, skew, stragglers, summary, why_late
from .base import Report

REGISTRY: dict[str, Report] = {m.REPORT.name: m.REPORT for m in (identity, summary, collectives, overlap, exposed, skew,
                                                                  stragglers, why_late, breakdown, doctor)}


def get(name: str) -> Report:
    try:
        return REGISTRY[name]
    except KeyError:
        raise TracekitError(f"no report named {name!r}; reports: {', '.join(REGISTRY)}") from None


def run_report(run, name: str, **params) -> pa.Table:
    return get(name).run(run, **params)
