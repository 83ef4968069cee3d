"""A run's Parquet files bound to a DuckDB connection: the ``events`` view (rank from the partition),
``traces`` and ``process_groups``, and one view per stored fact. Built here once, for the store (all
ranks) and for derive (one rank, or all)."""

from __future__ import annotations

from .paths import events_glob, facts_glob, table_path


def sql_string(path: str) -> str:
    """A path as a SQL string literal (DuckDB cannot bind a file name in DDL)."""
    check_path(path)
    return "'" + path.replace("'", "''") + "'"


def check_path(path: str) -> None:
    """DuckDB reads a backslash in a path as a directory separator: such a run cannot be read. Say so."""
    if "\\" in path:
        from ..errors import RunError
        raise RunError(f"{path}: a backslash in the path, which DuckDB reads as a directory separator; move the "
                       "run (or $TRACEKIT_CACHE) to a path without one")


def bind_events(con, run: str | None = None, *, files: list[str] | None = None, rank: int | None = None,
                ranks: tuple[int, int] | None = None) -> None:
    """``events`` over every rank of ``run`` (``ranks``: those from LO to HI only), or over one rank's
    ``files`` (their rank given)."""
    if files is None:
        where = f" WHERE rank BETWEEN {int(ranks[0])} AND {int(ranks[1])}" if ranks else ""
        con.execute(f"CREATE VIEW events AS SELECT rank, * EXCLUDE (rank) FROM read_parquet("
                    f"{sql_string(events_glob(run))}, hive_partitioning = true, hive_types = {{'rank': BIGINT}})"
                    + where)
    else:
        con.execute(f"CREATE VIEW events AS {rank_events(files, rank)}")


def rank_events(files: list[str], rank: int) -> str:
    """A query of one rank's events from its own files (layout.paths.rank_parts), the columns of ``events``:
    what reads a few ranks of a big run opens only their files, not every rank's."""
    return (f"SELECT CAST({int(rank)} AS BIGINT) AS rank, * "
            f"FROM read_parquet([{', '.join(sql_string(f) for f in files)}])")


def bind_tables(con, run: str, names=("traces", "process_groups"), *, materialize: bool = False) -> None:
    """``traces`` and ``process_groups`` of ``run``: views, or tables read once (``materialize``)."""
    kind = "TABLE" if materialize else "VIEW"
    for name in names:
        con.execute(f"CREATE {kind} {name} AS SELECT * FROM read_parquet({sql_string(table_path(run, name))})")


def bind_fact(con, run: str, name: str) -> None:
    """The stored fact ``name`` (every file of facts/NAME/) as a view of that name."""
    con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet({sql_string(facts_glob(run, name))}, "
                "union_by_name = true)")

