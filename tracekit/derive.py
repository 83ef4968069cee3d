"""Per-rank facts: the map step. Right after a rank's events are written, the `.sql` rules run on that
rank's events alone and their results are written into the run as Parquet (``facts/NAME/rank-R.parquet``).
Opening a run then reads these small tables; cross-rank views (matching, stragglers) and the size
buckets are computed from them on the fly. A rule is written once, in its `.sql` file: ingest and open
run the same text, ingest on one rank, open over the facts of all.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import queue
import shutil
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import duckdb

from . import settings
from . import sql as _sql
from .comms.bandwidth import BUSBW_FACTORS
from .comms.buckets import bucket_rows
from .comms.comm_kernels import comm_kernel_rows
from .comms.dtypes import dtype_rows
from .compact import compact
from .errors import TracekitError, disk_error
from .ingestion.schema import PG_SCHEMA, TRACES_SCHEMA, rows_table
from .kernel_families import family_rows

# Derived per rank at ingest, in this order (each may use the ones before it).
FACTS: list[str] = ["steps", "gpu_kernels", "comm_ops", "_collectives", "comm_intervals", "step_windows",
                    "comm_segments", "comm_overlap", "_comm_exposure"]
# Derived once per run at the end of ingest (the reduce step), from the per-rank collectives.
REDUCED: list[str] = ["collective_waits", "collective_instances", "stragglers"]
# Derived at the reduce step too, before REDUCED uses it: each host's clock offset (tracekit.clocks).
CLOCKS = "clock_offsets"
FACTS_DIR = "facts"

# Small tables of facts registered on every connection: name -> ([(column, SQL type, meaning)], rows).
FACT_TABLES = {
    "tk_dtypes": [("spelling", "VARCHAR", "dtype as a trace spells it"), ("canonical", "VARCHAR", "canonical dtype name"),
                  ("bytes", "BIGINT", "bytes per element"),
                  ("kernel_suffix", "BOOLEAN", "NCCL spells the dtype so at the end of a kernel's name (_f32, _bf16)")],
    "tk_busbw_factors": [("collective", "VARCHAR", "collective"),
                         ("coeff", "DOUBLE", "the factor, or its coefficient when per_rank_share"),
                         ("per_rank_share", "BOOLEAN", "the factor is coeff x (n - 1) / n for a group of n ranks"),
                         ("point_to_point", "BOOLEAN", "one peer: the factor is coeff whatever the group")],
    "tk_size_buckets": [("lo_bytes", "BIGINT", "lower edge, bytes (inclusive)"),
                        ("hi_bytes", "BIGINT", "upper edge, bytes (exclusive)"), ("label", "VARCHAR", "human label"),
                        ("bucket_order", "INTEGER", "sort order")],
    "tk_comm_kernels": [("rule_order", "INTEGER", "the first pattern a kernel name matches wins"),
                        ("pattern", "VARCHAR", "kernel name pattern (SQL LIKE, case-blind: % any text, _ any one character)"),
                        ("library", "VARCHAR", "nccl, rccl, msccl, mscclpp, deepep, nvshmem, symm_mem, userbuffers, custom_ar, ..."),
                        ("kind", "VARCHAR", "collective, p2p, ep_dispatch, ep_combine or sync"),
                        ("collective", "VARCHAR", "the collective the name says (NULL: read it from the name, see tk_collective)"),
                        ("source", "VARCHAR", "the public source that names the kernel")],
    "tk_kernel_families": [("rule_order", "INTEGER", "the first pattern a kernel name matches wins"),
                           ("pattern", "VARCHAR", "kernel name pattern (SQL LIKE, case-blind, backslash escapes _)"),
                           ("family", "VARCHAR", "gemm, attention or elementwise (a name no pattern matches: other)"),
                           ("why", "VARCHAR", "what the pattern catches")],
}


def facts_key() -> str:
    """Changes whenever a rule that the stored facts depend on changes (the .sql rules, the dtype table,
    the communication-kernel catalogue with the user's rows): a run whose facts carry another key is
    re-derived from its events."""
    return _facts_key(tuple(r[:5] for r in comm_kernel_rows()))


@functools.lru_cache(maxsize=8)
def _facts_key(catalogue: tuple) -> str:
    h = hashlib.sha256(_sql.load("views", "macros").text.encode())
    for name in FACTS + REDUCED + ["rank_clocks", "_collectives_aligned"]:
        h.update(_sql.load("views", name).text.encode())
    h.update(repr(dtype_rows()).encode())
    h.update(repr(BUSBW_FACTORS).encode())
    h.update(repr(catalogue).encode())
    h.update(b"clocks 1")  # tracekit.clocks' estimator
    return h.hexdigest()[:16]


def define_base(con: duckdb.DuckDBPyConnection, size_buckets: list[int] | None = None) -> None:
    """The fact tables and macros every connection has, run or single rank."""
    rows = {"tk_dtypes": dtype_rows(), "tk_busbw_factors": list(BUSBW_FACTORS), "tk_size_buckets": bucket_rows(size_buckets),
            "tk_comm_kernels": comm_kernel_rows(), "tk_kernel_families": family_rows()}
    for name, cols in FACT_TABLES.items():
        con.execute(f"CREATE TABLE {name} ({', '.join(f'{c} {t}' for c, t, _ in cols)})")
        if rows[name]:  # one statement (executemany runs one per row: most of a small rank's derive time)
            values = ", ".join(f"({', '.join('?' * len(cols))})" for _ in rows[name])
            con.execute(f"INSERT INTO {name} VALUES {values}", [v for row in rows[name] for v in row])
    con.execute(_sql.load("views", "macros").text)


def sql_string(path: str) -> str:
    """A path as a SQL string literal (DuckDB cannot bind a file name in DDL)."""
    return "'" + path.replace("'", "''") + "'"


def _create(con: duckdb.DuckDBPyConnection, name: str) -> None:
    con.execute(_sql.load("views", name).text)  # CREATE OR REPLACE VIEW name AS ...
    con.execute(f"CREATE TABLE _m_{name} AS SELECT * FROM {name}")
    con.execute(f"DROP VIEW {name}")
    con.execute(f"ALTER TABLE _m_{name} RENAME TO {name}")


def _materialize_all(con: duckdb.DuckDBPyConnection, names: list[str], parquet_of, fail) -> None:
    """Run each fact's .sql once into a table of its name (the rules after it read the table, not the rule
    again) and write it to ``parquet_of(name)``: each as soon as the facts its rule uses are tables, two rules
    at once and the Parquet writes on a third cursor: most of these queries run on one core (their inputs
    are smaller than DuckDB's unit of parallelism), so independent facts (gpu_kernels and comm_ops) and the
    writes of finished facts proceed beside the next rule. ``fail(name, exc)`` turns a DuckDB error into ours."""
    deps = {n: [d for d in _sql.names_in(_sql.load("views", n).text, names) if d != n] for n in names}
    created: set[str] = set()
    running: dict = {}
    copies = []
    # one cursor per worker, opened and closed here on the calling thread: a worker only runs queries on
    # its own cursor (DuckDB's rule for threads), never opens or closes one
    rule_cursors: queue.Queue = queue.Queue()
    for _ in range(2):
        rule_cursors.put(con.cursor())
    write_cursor = con.cursor()

    def create(name):
        cur = rule_cursors.get()
        try:
            _create(cur, name)
        finally:
            rule_cursors.put(cur)

    def copy(name):
        write_cursor.execute(f"COPY {name} TO {sql_string(parquet_of(name))} (FORMAT parquet)")

    def check(name, fut):
        try:
            fut.result()
        except duckdb.Error as exc:
            disk = disk_error(exc)  # a full disk is not the trace's fault: the ingest fails, never skips it
            raise (disk or fail(name, exc)) from None

    try:
        # rules and Parquet writes on pools of their own: a write never delays the next rule
        with ThreadPoolExecutor(max_workers=2) as pool, ThreadPoolExecutor(max_workers=1) as writes:
            try:
                while len(created) < len(names):
                    for n in names:
                        if n not in created and n not in running and all(d in created for d in deps[n]):
                            running[n] = pool.submit(create, n)
                    finished, _ = wait(list(running.values()), return_when=FIRST_COMPLETED)
                    for n, fut in list(running.items()):
                        if fut in finished:
                            check(n, fut)
                            del running[n]
                            created.add(n)
                            copies.append((n, writes.submit(copy, n)))
                for n, fut in copies:
                    check(n, fut)
            except BaseException:
                for fut in list(running.values()) + [f for _, f in copies]:
                    fut.cancel()
                raise
    finally:  # the pools are joined: no query runs on these cursors any more
        while not rule_cursors.empty():
            rule_cursors.get().close()
        write_cursor.close()


def rank_parts(run_dir: str, rank: int) -> list[str]:
    """The Parquet files of one rank's events in a run (one, or two when two writers shared the work)."""
    d = os.path.join(run_dir, "events", f"rank={rank}")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".parquet"))


def derive_rank(events_parquet: str | list[str], rank: int, trace: dict, process_groups: list[dict], out_dir: str,
                threads: int = 1, reduced: bool = False) -> None:
    """Run the per-rank rules on one rank's events and write ``out_dir/NAME.parquet`` for each fact
    (with ``threads`` DuckDB threads: the cores this file has to itself). ``reduced``: the run has this
    rank only, so its cross-rank facts are derived here too, on the same connection."""
    os.makedirs(out_dir, exist_ok=True)
    with _facts_connection(threads, os.path.join(out_dir, "_spill")) as con:
        files = [events_parquet] if isinstance(events_parquet, str) else list(events_parquet)
        con.execute(f"CREATE VIEW events AS SELECT CAST({int(rank)} AS BIGINT) AS rank, * "
                    f"FROM read_parquet([{', '.join(sql_string(f) for f in files)}])")
        if reduced:  # the run is this rank: its host as the run's would be (tracekit.hosts)
            from .hosts import assign_hosts
            trace = dict(trace)
            assign_hosts([trace])
        con.register("_traces", rows_table([trace], TRACES_SCHEMA))
        con.register("_pgs", rows_table(process_groups, PG_SCHEMA))
        con.execute("CREATE TABLE traces AS SELECT * FROM _traces")
        con.execute("CREATE TABLE process_groups AS SELECT * FROM _pgs")
        define_base(con)
        def fail(name, exc):  # the events are written; their facts could not be: say which
            return TracekitError(f"{trace.get('path')}: could not derive its {name.lstrip('_')} (rank {rank}): "
                                 f"{str(exc).splitlines()[0]}; this is likely a tracekit bug: report it with the "
                                 "file, or leave it out (`tracekit ingest --on-error skip` ingests the other files)")

        _materialize_all(con, FACTS, lambda name: os.path.join(out_dir, name + ".parquet"), fail)
        if reduced:
            reduce_on(con, lambda name: os.path.join(out_dir, name + ".parquet"), fail)


def derive_ranks(items: list[tuple[list[str], int, dict, list[dict]]], out_dir: str, threads: int = 1) -> None:
    """The per-rank rules for several ranks at once, on one connection: ``items`` are (events files, rank,
    traces row, process groups); ``out_dir/NAME.parquet`` holds all their rows (the rules partition by
    rank: the rows are those derive_rank gives, rank by rank). A connection and the planning of the rules
    cost about 0.3 s of CPU whatever the rank's size: for small ranks (a 3.4k-event DLRM rank derives in
    less than that), one connection per batch of ranks is most of the saving at thousands of ranks."""
    if len(items) == 1:
        files, rank, trace, pgs = items[0]
        derive_rank(files, rank, trace, pgs, out_dir, threads)
        return
    os.makedirs(out_dir, exist_ok=True)
    with _facts_connection(threads, os.path.join(out_dir, "_spill")) as con:
        con.execute("CREATE VIEW events AS " + " UNION ALL ".join(
            f"SELECT CAST({int(rank)} AS BIGINT) AS rank, * FROM read_parquet([{', '.join(map(sql_string, files))}])"
            for files, rank, _, _ in items))
        con.register("_traces", rows_table([t for _, _, t, _ in items], TRACES_SCHEMA))
        con.register("_pgs", rows_table([p for *_, pgs in items for p in pgs], PG_SCHEMA))
        con.execute("CREATE TABLE traces AS SELECT * FROM _traces")
        con.execute("CREATE TABLE process_groups AS SELECT * FROM _pgs")
        define_base(con)
        ranks = [r for _, r, _, _ in items]
        _materialize_all(con, FACTS, lambda name: os.path.join(out_dir, name + ".parquet"),
                         lambda name, exc: TracekitError(f"ranks {min(ranks)}-{max(ranks)}: could not derive their "
                                                         f"{name.lstrip('_')}: {str(exc).splitlines()[0]}"))


def derive_run(run_dir: str, threads: int = 1, align: bool = True, timings: dict | None = None) -> None:
    """Every rank's facts at once, in one connection, straight to facts/NAME/all.parquet: for a run of
    small files, where setting up a connection and planning the rules per rank costs more than the work
    (the rules partition by rank: the rows are those derive_rank gives, rank by rank)."""
    with _facts_connection(threads, os.path.join(run_dir, "_spill")) as con:
        glob = os.path.join(run_dir, "events", "*", "*.parquet")
        con.execute(f"CREATE VIEW events AS SELECT rank, * EXCLUDE (rank) FROM read_parquet({sql_string(glob)}, "
                    "hive_partitioning = true, hive_types = {'rank': BIGINT})")
        for name in ("traces", "process_groups"):
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM read_parquet("
                        f"{sql_string(os.path.join(run_dir, name + '.parquet'))})")
        define_base(con)
        for name in FACTS + REDUCED + [CLOCKS]:
            os.makedirs(os.path.join(run_dir, FACTS_DIR, name), exist_ok=True)
        def fail(name, exc):
            return TracekitError(f"{run_dir}: could not derive its {name.lstrip('_')}: {str(exc).splitlines()[0]}")

        parquet_of = lambda name: os.path.join(run_dir, FACTS_DIR, name, "all.parquet")
        _materialize_all(con, FACTS, parquet_of, fail)
        reduce_on(con, parquet_of, fail, align, timings)


def reduce_on(con: duckdb.DuckDBPyConnection, parquet_of, fail, align: bool = True, timings: dict | None = None) -> None:
    """The cross-rank facts on a connection that has traces and _collectives: first on raw clocks; then
    each host's clock offset from the collectives spanning hosts (tracekit.clocks), written as
    clock_offsets; where any host's clock needed a correction, the cross-rank facts again on the aligned
    clock. (A run on one host, or whose hosts agree, pays one pass.)"""
    from . import clocks

    con.register("_no_offsets", rows_table([], clocks.OFFSETS_SCHEMA))
    con.execute(f"CREATE OR REPLACE TABLE {CLOCKS} AS SELECT * FROM _no_offsets")
    con.unregister("_no_offsets")
    for name in ("rank_clocks", "_collectives_aligned"):
        con.execute(_sql.load("views", name).text)
    timings = {} if timings is None else timings
    start = time.perf_counter()
    _materialize_all(con, REDUCED, parquet_of, fail)
    timings["cross_rank_s"] = round(time.perf_counter() - start, 3)
    start = time.perf_counter()
    offsets = clocks.estimate(con, align)
    con.register("_offsets", offsets)
    con.execute(f"CREATE OR REPLACE TABLE {CLOCKS} AS SELECT * FROM _offsets")
    con.unregister("_offsets")
    con.execute(f"COPY {CLOCKS} TO {sql_string(parquet_of(CLOCKS))} (FORMAT parquet)")
    if any((r["offset_ns"] or 0) != 0 or (r["drift_ppm"] or 0) != 0 for r in offsets.to_pylist()):
        for name in reversed(REDUCED):
            con.execute(f"DROP TABLE {name}")
        _materialize_all(con, REDUCED, parquet_of, fail)
    timings["align_s"] = round(time.perf_counter() - start, 3)  # the estimate, and the facts again on aligned clocks


@contextlib.contextmanager
def _facts_connection(threads: int, spill: str):
    """A DuckDB connection for deriving facts: ``threads`` threads, derive_memory_mb() of memory, spilling
    past it to ``spill`` (inside the run being built: removed with the connection, never in the cwd)."""
    con = duckdb.connect(config={"threads": max(1, threads), "memory_limit": f"{derive_memory_mb()}MB",
                                 "temp_directory": spill})
    try:
        yield con
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)


def derive_memory_mb() -> int:
    """DuckDB's memory for one rank's facts: $TRACEKIT_DERIVE_MEMORY_MB, default 256. Past it DuckDB spills
    to disk (inside the run being built), so that the peak memory of an ingest does not grow with the
    trace: a 1 GB trace stays under 512 MB in all."""
    return settings.derive_memory_mb()


def reduce_run(run_dir: str, align: bool = True, timings: dict | None = None) -> None:
    """The reduce step, once the per-rank facts are in place under ``run_dir``: the cross-rank facts
    (matching, clock offsets, waits, stragglers), then the per-rank facts compacted, up to 256 ranks a file
    (tracekit.compact: a query then opens a few files, not one per rank). ``timings`` gets the seconds of
    each part."""
    timings = {} if timings is None else timings
    con = None
    try:
        if not all(os.path.isfile(os.path.join(run_dir, FACTS_DIR, name, "all.parquet")) for name in REDUCED):
            con = duckdb.connect()  # (derived already where the run is one rank, or derived whole: derive_run)
            con.execute(f"CREATE VIEW traces AS SELECT * FROM read_parquet({sql_string(os.path.join(run_dir, 'traces.parquet'))})")
            define_base(con)
            glob = os.path.join(run_dir, FACTS_DIR, "_collectives", "*.parquet")
            con.execute(f"CREATE VIEW _collectives AS SELECT * FROM read_parquet({sql_string(glob)}, union_by_name = true)")
            for name in REDUCED + [CLOCKS]:
                os.makedirs(os.path.join(run_dir, FACTS_DIR, name), exist_ok=True)
            reduce_on(con, lambda name: os.path.join(run_dir, FACTS_DIR, name, "all.parquet"),
                      lambda name, exc: TracekitError(f"{run_dir}: could not derive its {name}: "
                                                      f"{str(exc).splitlines()[0]}"), align, timings)
        start = time.perf_counter()
        compact([os.path.join(run_dir, FACTS_DIR, name) for name in FACTS])
        timings["compact_s"] = round(time.perf_counter() - start, 3)
    finally:
        if con is not None:
            con.close()


def place_facts(rank_dir: str, run_dir: str, rank) -> None:
    """Move one rank's fact files (from derive_rank) into the run's layout: facts/NAME/rank-R.parquet
    (``rank`` 'LO-HI' for a batch's, from derive_ranks: facts/NAME/rank-LO-HI.parquet)."""
    for name in FACTS:
        dest = os.path.join(run_dir, FACTS_DIR, name)
        os.makedirs(dest, exist_ok=True)
        os.replace(os.path.join(rank_dir, name + ".parquet"), os.path.join(dest, f"rank-{rank}.parquet"))
    for name in REDUCED + [CLOCKS]:  # derive_rank(reduced=True): the run is this rank
        if os.path.isfile(os.path.join(rank_dir, name + ".parquet")):
            os.makedirs(os.path.join(run_dir, FACTS_DIR, name), exist_ok=True)
            os.replace(os.path.join(rank_dir, name + ".parquet"), os.path.join(run_dir, FACTS_DIR, name, "all.parquet"))
    os.rmdir(rank_dir)


def rederive_run(run_dir: str) -> None:
    """Derive a run's facts again from its own events (the original traces are not needed): for a run
    written by another version of the rules, or on request (``tracekit ingest --rederive RUN``)."""
    import pyarrow.parquet as pq

    from .errors import RunError
    from .ingestion.run_writer import MANIFEST, write_json_atomic

    run_dir = os.path.abspath(run_dir)
    traces = pq.read_table(os.path.join(run_dir, "traces.parquet")).to_pylist()
    pgs = pq.read_table(os.path.join(run_dir, "process_groups.parquet")).to_pylist()
    tmp = os.path.join(run_dir, f".facts.tmp-{os.getpid()}")
    try:
        os.makedirs(tmp, exist_ok=False)
    except OSError as exc:
        raise RunError(f"{run_dir}: cannot write its facts ({exc.strerror}); re-derive a writable copy, "
                       f"or ingest the traces again with -o elsewhere") from None
    try:
        for t in traces:
            rank = t["rank"]
            one = os.path.join(tmp, f"_rank-{rank}")
            derive_rank(rank_parts(run_dir, rank), rank, t, [p for p in pgs if p["rank"] == rank], one)
            place_facts(one, tmp, rank)
        shutil.copy(os.path.join(run_dir, "traces.parquet"), os.path.join(tmp, "traces.parquet"))
        with open(os.path.join(run_dir, MANIFEST)) as f:
            align = json.load(f).get("options", {}).get("align", True)
        reduce_run(tmp, align=align)
        os.remove(os.path.join(tmp, "traces.parquet"))
        # the facts directory is replaced whole, then the manifest says which rules made it
        old = os.path.join(run_dir, f".facts.old-{os.getpid()}")
        facts = os.path.join(run_dir, FACTS_DIR)
        if os.path.isdir(facts):
            os.replace(facts, old)
        os.replace(os.path.join(tmp, FACTS_DIR), facts)
        with open(os.path.join(run_dir, MANIFEST)) as f:
            manifest = json.load(f)
        manifest["facts_key"] = facts_key()
        write_json_atomic(os.path.join(run_dir, MANIFEST), manifest)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
