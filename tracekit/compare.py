"""Compare two runs (a regression hunt, a config change): each run's side is a report over its own
facts (sql/reports/_diff_side.sql); the comparison joins them (sql/reports/diff.sql)."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from . import sql as _sql
from .errors import QueryError


def diff(run_a, run_b) -> pa.Table:
    """Run B against run A, per collective x group x size bucket and per step, largest changes first."""
    side = _sql.load("reports", "_diff_side").text
    con = duckdb.connect()
    try:
        con.register("side_a", run_a.sql(side))
        con.register("side_b", run_b.sql(side))
        return con.sql(_sql.load("reports", "diff").text).to_arrow_table()
    except duckdb.Error as exc:
        raise QueryError(f"diff of {run_a.name} and {run_b.name} failed: {exc}") from None
    finally:
        con.close()
