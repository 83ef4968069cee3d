"""A report of one row per rank (or per rank and step) for a big job: each number's spread over the rows,
and the rows that matter most (the report's ``-- @most`` column, largest first). Plain tables: the terminal
(cli/report.py) and the HTML page (html_tables.py) draw them; every row stays one flag away."""

from __future__ import annotations

import pyarrow as pa

# above this many ranks a per-rank table is drawn as its spread and its MOST_ROWS rows that matter most
PER_RANK_ROWS = 64
MOST_ROWS = 8


def ranks_in(t: pa.Table) -> int:
    """How many ranks a table's rows cover (0 without a rank column)."""
    import pyarrow.compute as pc

    return len(pc.unique(t["rank"])) if "rank" in t.column_names else 0


def rank_spread(t: pa.Table) -> pa.Table:
    """Per number column of ``t`` (rank and step aside), in ``t``'s column order: the rows with a value,
    min, median, 90th percentile, max and the rank (and step) of the max (reports/_rank_spread.sql)."""
    import duckdb
    import pyarrow.compute as pc

    from .. import sql_files as _sql
    from ..render import is_number

    numbers = [f.name for f in t.schema if f.name not in ("rank", "step") and is_number(f)]
    step = t["step"] if "step" in t.column_names else pa.nulls(t.num_rows, pa.int64())
    data = pa.table({"rank": t["rank"], "step": step, **{c: pc.cast(t[c], pa.float64()) for c in numbers}})
    con = duckdb.connect()
    try:
        con.register("per_rank", data)
        spread = con.sql(_sql.load("reports", "_rank_spread").text).to_arrow_table()
    finally:
        con.close()
    order = {c: i for i, c in enumerate(numbers)}
    spread = spread.take(sorted(range(spread.num_rows), key=lambda i: order[spread["column"][i].as_py()]))
    if spread["max_step"].null_count == spread.num_rows:
        spread = spread.drop_columns(["max_step"])
    return spread


def most_rows(t: pa.Table, column: str, n: int = MOST_ROWS) -> pa.Table:
    """The ``n`` rows of ``t`` with the largest ``column`` (ties: the lowest rank, then step)."""
    keys = [(column, "descending"), ("rank", "ascending")] + ([("step", "ascending")] if "step" in t.column_names
                                                                else [])
    return t.sort_by(keys).slice(0, n)
