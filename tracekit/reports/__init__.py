"""Reports: each declared by its .sql header alone (tracekit/sql/reports/NAME.sql; see declared.py for the
header and the limit rule). The registry is built by scanning that folder: adding a report is adding a file."""

from __future__ import annotations

import pyarrow as pa

from .. import sql_files as _sql
from ..errors import UsageError
from .base import Param, Report
from .declared import scan

__all__ = ["REGISTRY", "Param", "Report", "get", "run_report"]

REGISTRY: dict[str, Report] = scan(_sql.rule_files(("reports",)))


def get(name: str) -> Report:
    try:
        return REGISTRY[name]
    except KeyError:
        from ..query_errors import close_names

        close = close_names(name, REGISTRY)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise UsageError(f"no report named {name!r}; {hint}reports: {', '.join(REGISTRY)}") from None


def run_report(run, name: str, **params) -> pa.Table:
    return get(name).run(run, **params)
