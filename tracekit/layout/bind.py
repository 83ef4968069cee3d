"""A run's Parquet files bound to a DuckDB connection: the ``events`` view (rank from the partition),
``traces`` and ``process_groups``, and one view per stored fact. Built here once, for the store (all
ranks) and for derive (one rank, or all)."""

from __future__ import annotations

import os

from ..run_tables import EVENT_COLUMNS
from .paths import EVENTS_DIR, events_glob, facts_glob, is_packed, packed_files, table_path


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


def _duck_type(t) -> str:
    import pyarrow as pa

    if pa.types.is_int64(t):
        return "BIGINT"
    if pa.types.is_int32(t):
        return "INTEGER"
    if pa.types.is_float64(t):
        return "DOUBLE"
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_string(t):
        return "VARCHAR"
    raise TypeError(f"events column of type {t}: add its DuckDB type here")


def _no_rows(rank: bool) -> str:
    cols = [("rank", "BIGINT")] if rank else []
    cols += [(n, _duck_type(t)) for n, t, _ in EVENT_COLUMNS]
    return "SELECT " + ", ".join(f"CAST(NULL AS {t}) AS {n}" for n, t in cols) + " WHERE false"


def whole_schema(select: str, rank: bool = True) -> str:
    """``select`` (of events files, read with union_by_name) with every column of the events schema, in its
    order (``rank`` first): an events file holds only the columns its rows gave a value
    (ingestion/one_file.py), so one that every file of ``select`` lacks is NULL here, of its type. (DuckDB
    reads only the columns a query uses, and pushes its filters into the files, through this union.)"""
    return f"SELECT * FROM ({_no_rows(rank)} UNION ALL BY NAME {select})"


def read_events(files: list[str], options: str = "") -> str:
    """read_parquet of events ``files``, which may differ in their columns."""
    return f"read_parquet([{', '.join(map(sql_string, files))}], union_by_name = true{options})"


def bind_events(con, run: str | None = None, *, files: list[str] | None = None, rank: int | None = None,
                ranks: tuple[int, int] | None = None) -> None:
    """``events`` over every rank of ``run`` (``ranks``: those from LO to HI only), or over one rank's
    ``files`` (their rank given)."""
    if files is None:
        con.execute(f"CREATE VIEW events AS {run_events(run, ranks)}")
    else:
        con.execute(f"CREATE VIEW events AS {rank_events(files, rank)}")


def run_events(run: str, ranks: tuple[int, int] | None = None) -> str:
    """A query of every rank's events of ``run`` (``ranks``: LO to HI only): the rank folders
    (events/rank=R/, the rank from the folder's name) and the packed files of many small ranks
    (events/packed/, a rank column each: tracekit/pack_events.py), whichever the run has. The packed
    files outside ``ranks`` are not opened."""
    where = f" WHERE rank BETWEEN {int(ranks[0])} AND {int(ranks[1])}" if ranks else ""
    packed = [p for lo, hi, p in packed_files(run) if not ranks or (lo <= ranks[1] and hi >= ranks[0])]
    parts = []
    listed = bool(ranks) and ranks[1] - ranks[0] < FILES_LISTED
    folders = _folder_files(run, ranks) if listed else []
    if folders:  # a few ranks of many: their files named (a glob lists every rank's folder, for each query)
        parts.append(whole_schema(f"SELECT * FROM {read_events(folders, HIVE)}{where}"))
    elif not packed or (not listed and _has_rank_folders(run)):  # (neither: DuckDB's error, as before)
        parts.append(whole_schema(f"SELECT * FROM read_parquet({sql_string(events_glob(run))}, "
                                  f"union_by_name = true{HIVE}){where}"))
    if packed:
        parts.append(whole_schema(f"SELECT * FROM {read_events(packed)}{where}"))
    return " UNION ALL ".join(parts)


HIVE = ", hive_partitioning = true, hive_types = {'rank': BIGINT}"  # (the rank from events/rank=R/)
FILES_LISTED = 4096  # a range of up to this many ranks has its folders listed, not globbed


def _folder_files(run: str, ranks: tuple[int, int]) -> list[str]:
    """The events files of the rank folders of ranks LO to HI."""
    files = []
    for r in range(int(ranks[0]), int(ranks[1]) + 1):
        d = os.path.join(run, EVENTS_DIR, f"rank={r}")
        try:
            files += sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".parquet"))
        except FileNotFoundError:
            continue
    return files


def _has_rank_folders(run: str) -> bool:
    try:
        return any(n.startswith("rank=") for n in os.listdir(os.path.join(run, EVENTS_DIR)))
    except OSError:
        return True  # (said by DuckDB, as before)


def rank_events(files: list[str], rank: int) -> str:
    """A query of one rank's events from its own files (layout.paths.rank_parts), the columns of ``events``:
    what reads a few ranks of a big run opens only their files, not every rank's. A packed file (of many
    small ranks) gives that rank's rows."""
    if files and all(is_packed(f) for f in files):
        return whole_schema(f"SELECT * FROM {read_events(files)} WHERE rank = {int(rank)}")
    # (not the rank of a folder's name, events/rank=R/, which DuckDB would add as a second column)
    return whole_schema(f"SELECT CAST({int(rank)} AS BIGINT) AS rank, * "
                        f"FROM {read_events(files, ', hive_partitioning = false')}")


def bind_tables(con, run: str, names=("traces", "process_groups"), *, materialize: bool = False) -> None:
    """``traces`` and ``process_groups`` of ``run``: views, or tables read once (``materialize``)."""
    kind = "TABLE" if materialize else "VIEW"
    for name in names:
        con.execute(f"CREATE {kind} {name} AS SELECT * FROM read_parquet({sql_string(table_path(run, name))})")


def bind_fact(con, run: str, name: str) -> None:
    """The stored fact ``name`` (every file of facts/NAME/) as a view of that name."""
    con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet({sql_string(facts_glob(run, name))}, "
                "union_by_name = true)")

