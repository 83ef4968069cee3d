"""Derive: the `.sql` rules run on events, and their results written as Parquet. Rules in
(tracekit.rules), tables out (the files it is told to write); ingest decides where and when
(tracekit/ingestion/run_writer.py), the run layout says where the files go (tracekit/layout).

- derive_rank: the map step, one rank's facts from that rank's events, right after they are written
  (derive_ranks: several small ranks on one connection).
- derive_run: every rank's facts at once, for a run of small files.
- reduce_run / reduce_on: the reduce step, at the end of ingest: the cross-rank facts (matching, waits,
  stragglers, clock offsets) from the per-rank collectives, and the per-rank facts compacted.
- finish_run: after the reduce, the finish rules (a rank's facts with the cross-rank ones: where each
  step's time goes, each collective's lead-up), a partition of ranks at a time.
A rule is written once, in its `.sql` file. Opening a run reads the stored results; only what depends on
a choice made at open (size buckets, exposure labels) is computed then, from the facts.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import os
import queue
import shutil
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from . import settings
from . import sql_files as _sql
from .compact import RANKS_PER_FILE, compact, partition
from .errors import TracekitError, disk_error
from .layout.bind import bind_events, bind_fact, bind_tables, sql_string
from .layout.paths import facts_dir, facts_file, facts_glob, make_leaf_dir, rank_parts, table_path
from .rules import CLOCKS, FACTS, FINISHED, ORDER, REDUCED, define_base, graph, stored, uses, views_for
from .run_tables import PG_SCHEMA, TRACES_SCHEMA, rows_table
from .words import plural

_VIEW_RULES = {n for n, f in graph().items() if f.stage == "view"}


def _create(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Rule ``name``'s rows as a table of its name: its file's one ``CREATE OR REPLACE VIEW name AS`` made
    ``CREATE TABLE name AS``, one statement bound once (a view, then a table from it, then the view dropped
    and the table renamed would bind each query twice)."""
    con.execute(_table_sql(name))


def _write_rule(cur: duckdb.DuckDBPyConnection, name: str, path: str) -> None:
    """Rule ``name``'s rows straight to the Parquet file ``path``, never held as a table, and ``name`` a
    view of that file."""
    cur.execute(f"COPY (\n{_rule_query(name)}\n) TO {sql_string(path)} (FORMAT parquet)")
    cur.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet({sql_string(path)})")


@functools.lru_cache(maxsize=None)
def _rule_query(name: str) -> str:
    """The query of rule ``name``'s file: what follows its one ``CREATE OR REPLACE VIEW name AS``."""
    text = _sql.load("views", name).text
    head = f"CREATE OR REPLACE VIEW {name} AS"
    if text.count(head) != 1:  # (each rule file in tracekit/sql is one)
        raise TracekitError(f"tracekit/sql: the rule {name} is not one `{head} ...` statement")
    return text.split(head, 1)[1].strip().rstrip(";")


def _load_as_table(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """View ``name`` (of a file _write_rule wrote) replaced by a table of its rows."""
    con.execute(f"CREATE TABLE _tk_load AS SELECT * FROM {name}")
    con.execute(f"DROP VIEW {name}")
    con.execute(f"ALTER TABLE _tk_load RENAME TO {name}")


def _table_sql(name: str) -> str:
    if name in _VIEW_RULES:  # a view the next rules read: defined, not made a table
        return _sql.load("views", name).text
    return f"CREATE TABLE {name} AS\n{_rule_query(name)}"


def _write(cur: duckdb.DuckDBPyConnection, name: str, path: str) -> None:
    """Table ``name`` to the Parquet file ``path``."""
    cur.execute(f"COPY {name} TO {sql_string(path)} (FORMAT parquet)")


def _materialize_all(con: duckdb.DuckDBPyConnection, names: list[str], parquet_of, fail,
                     optional: frozenset = frozenset(), give_up: tuple = (), stream: bool = False) -> set[str]:
    """Run each fact's .sql once into a table of its name (the rules after it read the table, not the rule
    again) and write it to ``parquet_of(name)``: each as soon as the facts its rule uses are tables, two rules
    at once (of those ready, the one with the longest chain of rules waiting for it first) and the Parquet
    writes on a third cursor: most of these queries run on one core (their inputs
    are smaller than DuckDB's unit of parallelism), so independent facts (gpu_kernels and comm_ops) and the
    writes of finished facts proceed beside the next rule. A view rule among ``names`` (a one-rank run's
    reduce reads rank_clocks and _collectives_aligned) is defined once what it reads is there, never stored.
    ``fail(name, exc)`` turns a DuckDB error into ours. A rule of ``optional`` whose error becomes one of
    ``give_up`` is given up, with the rules that wait for it, and the others go on: returns those given up
    (a one-rank run's finish, out of memory beside its facts, is derived again by finish_run).
    ``stream``: the caller reads none of these tables afterwards, so no rule's rows are held as a table:
    each stored fact goes straight to its file (COPY of the rule's query), a scratch table of the finish to
    a file beside the connection's spill directory (removed at the end), and the rules after them read the
    files. Tables share DuckDB's memory budget with the rules: on a big trace they went past it, and DuckDB
    wrote them out to its spill files and read them back; a scratch table held beside a rule retried alone
    made that rule run out of memory again."""
    deps = {n: uses(n, names) for n in names}
    below: dict[str, int] = {}  # the rules on the longest chain of rules that wait for n, n included
    for n in reversed(names):  # (names is in graph order: every rule after the ones it uses)
        below[n] = 1 + max((below[m] for m in names if n in deps[m]), default=0)
    created: set[str] = set()
    given_up: set[str] = set()
    # streamed: each rule's rows straight to a file, read from there by the rules after it
    direct = {n for n in names if n not in _VIEW_RULES} if stream else set()
    scratch = None
    if stream and any(not stored(n) for n in direct):  # beside the spill directory, inside the run being built
        (spill,) = con.execute("SELECT current_setting('temp_directory')").fetchone()
        scratch = tempfile.mkdtemp(prefix="_scratch-", dir=os.path.dirname(spill))
    running: dict = {}
    copies = []
    alone: set[str] = set()  # rules to run again with nothing beside them (1M kernels of distinct names)
    # one cursor per worker, opened and closed here on the calling thread: a worker only runs queries on
    # its own cursor (DuckDB's rule for threads), never opens or closes one
    rule_cursors: queue.Queue = queue.Queue()
    for _ in range(2):
        rule_cursors.put(con.cursor())
    write_cursor = con.cursor()

    def run(cur, name):
        if name in direct:
            _write_rule(cur, name, parquet_of(name) if stored(name) else os.path.join(scratch, name + ".parquet"))
        else:
            _create(cur, name)

    def create(name):
        cur = rule_cursors.get()
        try:
            if name not in alone:
                run(cur, name)
                return
            # alone, and on one thread: DuckDB's memory per thread is the budget divided by its threads
            (threads,) = cur.execute("SELECT current_setting('threads')").fetchone()
            cur.execute("SET threads = 1")
            try:
                run(cur, name)
            finally:
                cur.execute(f"SET threads = {int(threads)}")
        finally:
            rule_cursors.put(cur)

    def copy(name):
        _write(write_cursor, name, parquet_of(name))

    def check(name, fut):
        try:
            fut.result()
        except duckdb.Error as exc:
            disk = disk_error(exc)  # a full disk is not the trace's fault: the ingest fails, never skips it
            raise (disk or fail(name, exc)) from None

    def settled(name, fut) -> bool:
        """check(), but an optional rule's error of a kind to give up on gives it up, and what waits for it."""
        try:
            check(name, fut)
            return True
        except give_up:
            if name not in optional:
                raise
            todo = [name]
            while todo:
                n = todo.pop()
                given_up.add(n)
                todo += [m for m in names if n in deps[m] and m not in given_up]
            return False

    try:
        # rules and Parquet writes on pools of their own: a write never delays the next rule
        with ThreadPoolExecutor(max_workers=2) as pool, ThreadPoolExecutor(max_workers=1) as writes:
            try:
                while len(created) + len(given_up) < len(names):
                    ready = [n for n in names if n not in created and n not in running and n not in given_up
                             and all(d in created for d in deps[n])]
                    for n in sorted(ready, key=lambda n: -below[n]):  # the longest chain first
                        if len(running) >= 2:
                            break  # a rule is chosen when a worker is free, not queued behind others
                        if any(m in alone for m in running) or (n in alone and running):
                            continue  # a rule that ran out of memory beside another runs alone
                        if n in alone:
                            wait([f for _, f in copies])
                        running[n] = pool.submit(create, n)
                    finished, _ = wait(list(running.values()), return_when=FIRST_COMPLETED)
                    for n, fut in list(running.items()):
                        if fut in finished:
                            if n not in alone and isinstance(fut.exception(), duckdb.OutOfMemoryException):
                                alone.add(n)  # two rules share the budget: this one again, with all of it
                                del running[n]
                                continue
                            if n in direct and isinstance(fut.exception(), duckdb.OutOfMemoryException):
                                # out of memory alone, reading files: again as a table, then written, from
                                # its inputs loaded as tables (DuckDB spills a table's blocks; read from
                                # Parquet, the same rule needed more than the budget: 400k kernels, 128 MB)
                                direct.discard(n)
                                for d in direct & set(deps[n]):
                                    _load_as_table(con, d)
                                    direct.discard(d)
                                del running[n]
                                continue
                            del running[n]
                            if not settled(n, fut):
                                continue
                            created.add(n)
                            if stored(n) and n not in direct:  # (not a finish's scratch table)
                                copies.append((n, writes.submit(copy, n)))
                for n, fut in copies:
                    if isinstance(fut.exception(), duckdb.OutOfMemoryException):
                        # a write beside two rules shares the budget with them (a table of 200k distinct
                        # kernel names, in CI): again, now that nothing runs beside it
                        fut = writes.submit(copy, n)
                    settled(n, fut)
            except BaseException:
                for fut in list(running.values()) + [f for _, f in copies]:
                    fut.cancel()
                raise
    finally:  # the pools are joined: no query runs on these cursors any more
        while not rule_cursors.empty():
            rule_cursors.get().close()
        write_cursor.close()
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    return given_up


def derive_rank(events_parquet: str | list[str], rank: int, trace: dict, process_groups: list[dict], out_dir: str,
                threads: int = 1, reduced: bool = False) -> None:
    """Run the per-rank rules on one rank's events and write ``out_dir/NAME.parquet`` for each fact
    (with ``threads`` DuckDB threads: the cores this file has to itself). ``reduced``: the run has this
    rank only, so its cross-rank facts are derived here too, on the same connection."""
    make_leaf_dir(out_dir)
    files = [events_parquet] if isinstance(events_parquet, str) else list(events_parquet)
    with _facts_connection(threads, os.path.join(out_dir, "_spill"), files) as con:
        bind_events(con, files=files, rank=rank)
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

        def parquet_of(name):
            return os.path.join(out_dir, name + ".parquet")

        if not reduced:
            _materialize_all(con, FACTS, parquet_of, fail, stream=True)
            return
        # the run is this rank: its cross-rank facts and its finish in the same pass as its facts, each as
        # soon as what it reads is there (collective_waits beside comm_segments, the lead-ups beside
        # comm_overlap); its one host needs no clock offset, so the cross-rank facts are final at once
        _no_offsets(con)
        rules = set(FACTS + REDUCED + FINISHED + views_for(REDUCED + FINISHED))
        finish_fail = _finish_fail(trace.get("path"), rank, rank)
        given_up = _materialize_all(con, [n for n in ORDER if n in rules], parquet_of,
                                    lambda name, exc: (finish_fail if name in FINISHED else fail)(name, exc),
                                    optional=frozenset(FINISHED), give_up=(_FinishOutOfMemory,), stream=True)
        if given_up:  # out of memory beside the facts: reduce_run derives the finish again (finish_run)
            _unlink_finish(parquet_of)
        # clock_offsets: one trace is one host, whose offset is 0 (clocks.estimate reads only `traces` for
        # it), so nothing is derived again on aligned clocks
        if _write_offsets(con, parquet_of):
            raise AssertionError(f"{trace.get('path')}: a run of one trace was given a clock offset")


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
    make_leaf_dir(out_dir)
    with _facts_connection(threads, os.path.join(out_dir, "_spill"), [f for fs, *_ in items for f in fs]) as con:
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
                                                         f"{name.lstrip('_')}: {str(exc).splitlines()[0]}"),
                         stream=True)


def derive_run(run_dir: str, threads: int = 1, align: bool = True, timings: dict | None = None) -> None:
    """Every rank's facts at once, in one connection, straight to facts/NAME/all.parquet: for a run of
    small files, where setting up a connection and planning the rules per rank costs more than the work
    (the rules partition by rank: the rows are those derive_rank gives, rank by rank)."""
    files = glob.glob(os.path.join(glob.escape(run_dir), "events", "*", "*.parquet"))
    with _facts_connection(threads, os.path.join(run_dir, "_spill"), files) as con:
        bind_events(con, run_dir)
        bind_tables(con, run_dir, materialize=True)
        define_base(con)
        for name in FACTS + REDUCED + [CLOCKS]:
            os.makedirs(facts_dir(run_dir, name), exist_ok=True)
        def fail(name, exc):
            return TracekitError(f"{run_dir}: could not derive its {name.lstrip('_')}: {str(exc).splitlines()[0]}")

        def parquet_of(name):
            return facts_file(run_dir, name)

        _materialize_all(con, FACTS, parquet_of, fail)
        reduce_on(con, parquet_of, fail, align, timings)
        (lo, hi), = con.execute("SELECT min(rank), max(rank) FROM traces").fetchall()
        if FINISHED and hi - lo + 1 <= FINISH_RANKS:  # one partition: the finish here, not on a connection of its own
            start = time.perf_counter()
            for name in _FINISH_STORED:
                os.makedirs(facts_dir(run_dir, name), exist_ok=True)
            _finish_on(con, parquet_of, _finish_fail(run_dir, lo, hi))
            if timings is not None:
                timings["finish_s"] = round(time.perf_counter() - start, 3)


def _finish_on(con: duckdb.DuckDBPyConnection, parquet_of, fail) -> None:
    """The finish rules on a connection that already holds every table they read, for one partition of
    ranks (derive_run's small run, derive_rank's run of one rank): no second connection, no reading back
    the facts just written. With the connection's threads: step_breakdown adds its fractional shares in
    time order (its sum's ORDER BY), so its figures are those of finish_run's one-thread partitions to the
    last bit. Out of memory, what it wrote is removed and reduce_run does it again, partition by partition
    (finish_run)."""
    if not FINISHED:
        return
    for name in views_for(FINISHED):
        con.execute(_sql.load("views", name).text)
    try:
        _materialize_all(con, FINISHED, parquet_of, fail)
    except _FinishOutOfMemory:
        _unlink_finish(parquet_of)


def _unlink_finish(parquet_of) -> None:
    for name in FINISHED:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(parquet_of(name))


def reduce_on(con: duckdb.DuckDBPyConnection, parquet_of, fail, align: bool = True,
              timings: dict | None = None) -> None:
    """The cross-rank facts on a connection that has traces and _collectives: first on raw clocks; then
    each host's clock offset from the collectives spanning hosts (tracekit.clocks), written as
    clock_offsets; where any host's clock needed a correction, the cross-rank facts again on the aligned
    clock. (A run on one host, or whose hosts agree, pays one pass.)"""
    _no_offsets(con)
    for name in views_for(REDUCED):  # the views the reduce rules read (rank_clocks, _collectives_aligned)
        con.execute(_sql.load("views", name).text)
    timings = {} if timings is None else timings
    start = time.perf_counter()
    _materialize_all(con, REDUCED, parquet_of, fail)
    timings["cross_rank_s"] = round(time.perf_counter() - start, 3)
    _align(con, parquet_of, fail, align, timings)


def _no_offsets(con: duckdb.DuckDBPyConnection) -> None:
    """clock_offsets with no row: every rank on its raw clock (the cross-rank facts' first pass)."""
    from . import clocks

    con.register("_no_offsets", rows_table([], clocks.OFFSETS_SCHEMA))
    con.execute(f"CREATE OR REPLACE TABLE {CLOCKS} AS SELECT * FROM _no_offsets")
    con.unregister("_no_offsets")


def _align(con: duckdb.DuckDBPyConnection, parquet_of, fail, align: bool = True, timings: dict | None = None) -> bool:
    """Each host's clock offset from the cross-rank facts on raw clocks, written as clock_offsets; where a
    host's clock needed a correction, the cross-rank facts again on the aligned clock (then True)."""
    timings = {} if timings is None else timings
    start = time.perf_counter()
    again = _write_offsets(con, parquet_of, align)
    if again:
        for name in reversed(REDUCED):
            con.execute(f"DROP TABLE {name}")
        _materialize_all(con, REDUCED, parquet_of, fail)
    timings["align_s"] = round(time.perf_counter() - start, 3)  # the estimate, and the facts again on aligned clocks
    return again


def _write_offsets(con: duckdb.DuckDBPyConnection, parquet_of, align: bool = True) -> bool:
    """clock_offsets, estimated from the cross-rank facts on raw clocks, as a table and its file; True
    where a host's clock needs a correction."""
    from . import clocks

    offsets = clocks.estimate(con, align)
    con.register("_offsets", offsets)
    con.execute(f"CREATE OR REPLACE TABLE {CLOCKS} AS SELECT * FROM _offsets")
    con.unregister("_offsets")
    con.execute(f"COPY {CLOCKS} TO {sql_string(parquet_of(CLOCKS))} (FORMAT parquet)")
    return any((r["offset_ns"] or 0) != 0 or (r["drift_ppm"] or 0) != 0 for r in offsets.to_pylist())


@contextlib.contextmanager
def _facts_connection(threads: int, spill: str, events: list[str] = (), memory_mb: int | None = None):
    """A DuckDB connection for deriving facts: ``threads`` threads, derive_memory_mb() of memory (plus room
    for the largest value of ``events``: value_room_mb), spilling past it to ``spill`` (inside the run
    being built: removed with the connection, never in the cwd)."""
    con = duckdb.connect(config={"threads": max(1, threads),
                                 "memory_limit": f"{(memory_mb or derive_memory_mb()) + value_room_mb(events)}MB",
                                 "temp_directory": spill})
    try:
        yield con
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)


VALUE_COPIES = 5  # copies of one value the rules hold at once (measured: a 200 MB kernel name needs ~4)
BIG_CHUNK = 16 << 20


def value_room_mb(files) -> int:
    """Memory for the largest text values of ``files``: DuckDB spills rows, but holds one value whole, and
    a rule holds it several times (the row, a hash table's key, a function's result, the writer's page):
    a 200 MB kernel name (under the 256 MB event cap) ran out of the 256 MB budget. The largest text
    column chunk of a row group (Parquet metadata, nothing read) bounds the largest value; chunks of
    ordinary traces (at most a few MB for 32K rows) get nothing."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    big = 0
    for f in files:
        try:
            md = pq.read_metadata(f)
        except (OSError, pa.ArrowException):
            continue  # (said by the query that reads it)
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            for c in range(rg.num_columns):
                col = rg.column(c)
                if col.physical_type == "BYTE_ARRAY" and col.total_uncompressed_size > big:
                    big = col.total_uncompressed_size
    return 0 if big < BIG_CHUNK else VALUE_COPIES * (big >> 20)


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
        if not all(os.path.isfile(facts_file(run_dir, name)) for name in REDUCED):
            con = duckdb.connect()  # (derived already where the run is one rank, or derived whole: derive_run)
            bind_tables(con, run_dir, ("traces",))
            define_base(con)
            bind_fact(con, run_dir, "_collectives")
            for name in REDUCED + [CLOCKS]:
                os.makedirs(facts_dir(run_dir, name), exist_ok=True)
            reduce_on(con, lambda name: facts_file(run_dir, name),
                      lambda name, exc: TracekitError(f"{run_dir}: could not derive its {name}: "
                                                      f"{str(exc).splitlines()[0]}"), align, timings)
        start = time.perf_counter()
        compact([facts_dir(run_dir, name) for name in FACTS])
        timings["compact_s"] = round(time.perf_counter() - start, 3)
    finally:
        if con is not None:
            con.close()
    if not all(os.path.isfile(facts_file(run_dir, name)) for name in _FINISH_STORED):  # (derive_run did it)
        start = time.perf_counter()
        finish_run(run_dir)
        timings["finish_s"] = round(time.perf_counter() - start, 3)


_FINISH_STORED = [n for n in FINISHED if stored(n)]  # the finish tables written to the run
FINISH_RANKS = RANKS_PER_FILE  # ranks in one partition of the finish (the compacted facts' partitions)


def finish_run(run_dir: str, workers: int | None = None) -> None:
    """The finish rules (tracekit/sql/finish) of a run whose facts and cross-rank facts are in place: up to
    FINISH_RANKS ranks at a time (facts/NAME/all.parquet when that is every rank, else
    facts/NAME/ranks-LO-HI.parquet, as compaction names them), each partition on a connection of its own
    with one thread and derive_memory_mb() of memory, ``workers`` side by side (default: every core). The
    rules partition by rank, so the rows are those of one pass over every rank; the work is never one, and
    its memory does not grow with the ranks."""
    if not FINISHED:
        return
    con = duckdb.connect()
    try:
        bind_tables(con, run_dir, ("traces",))
        ranks = [r for (r,) in con.execute("SELECT DISTINCT rank FROM traces ORDER BY rank").fetchall()]
    finally:
        con.close()
    chunks = partition(ranks, FINISH_RANKS)  # the rule of compaction's partitions
    for name in _FINISH_STORED:
        os.makedirs(facts_dir(run_dir, name), exist_ok=True)
    jobs = [(c, "all.parquet" if len(chunks) == 1 else _part_name(c)) for c in chunks]
    with ThreadPoolExecutor(max_workers=max(1, workers or os.cpu_count() or 1)) as pool:
        for fut in [pool.submit(_finish_chunk, run_dir, c, f) for c, f in jobs]:
            fut.result()


def _part_name(ranks: list[int]) -> str:
    return f"ranks-{ranks[0]:07d}-{ranks[-1]:07d}.parquet"


class _FinishOutOfMemory(TracekitError):
    """A finish partition ran out of its memory budget: tried again smaller, or with more memory."""


def _finish_fail(run_dir: str, lo: int, hi: int):
    """The error of a finish rule that failed on ranks ``lo``-``hi`` of ``run_dir`` (the version being built,
    hidden from the user: the message names the input files instead; derive_rank passes the input file)."""
    def fail(name, exc):
        ranks = f"rank {lo}" if lo == hi else f"ranks {lo}-{hi}"
        where = f"{_inputs_of(run_dir, lo, hi)}: could not derive its {name.lstrip('_')} ({ranks}): " \
                f"{str(exc).splitlines()[0]}"
        if isinstance(exc, duckdb.OutOfMemoryException):
            return _FinishOutOfMemory(
                f"{where}{_largest_event(run_dir, lo, hi)}; one rank alone was given up to "
                f"{4 ** (FINISH_MEMORY_STEPS - 1)}x TRACEKIT_DERIVE_MEMORY_MB (now {derive_memory_mb()} MB): set it "
                "higher and run the same command again")
        return TracekitError(f"{where}; this is likely a tracekit bug: report it")
    return fail


def _inputs_of(run_dir: str, lo: int, hi: int) -> str:
    """The input file of ranks ``lo``-``hi`` (the first and how many more), from the run's traces table;
    ``run_dir`` itself when it is a trace file."""
    if not os.path.isdir(run_dir):
        return run_dir
    try:
        rows = sorted((r["rank"], r["path"]) for r in pq.ParquetFile(table_path(run_dir, "traces")).read(
            columns=["rank", "path"]).to_pylist()
                      if lo <= r["rank"] <= hi)
    except (OSError, pa.ArrowException):
        rows = []
    if not rows:
        return f"the traces of {'rank' if lo == hi else 'ranks'} {lo}-{hi}"
    return rows[0][1] + (f" (and {plural(len(rows) - 1, 'other file', 'other files')})" if len(rows) > 1 else "")


def _largest_event(run_dir: str, lo: int, hi: int) -> str:
    """"; its largest event is #N (M MB of text)" for the ranks' events, or "" where they cannot be read."""
    files = [f for r in range(lo, hi + 1) for f in rank_parts(run_dir, r)] if os.path.isdir(run_dir) else []
    if not files or hi - lo > 64:
        return ""
    try:
        con = duckdb.connect(config={"threads": 1, "memory_limit": "256MB"})
        try:
            src = f"read_parquet([{', '.join(map(sql_string, files))}])"
            text = [c for c, t, *_ in con.execute(f"DESCRIBE SELECT * FROM {src}").fetchall() if t == "VARCHAR"]
            size = " + ".join(f"coalesce(strlen({c}), 0)" for c in text) or "0"
            # (arg_max: ORDER BY n DESC LIMIT 1 gave wrong sums here, DuckDB 2.0.1)
            found = con.execute(f"SELECT arg_max(event_index, n), max(n) FROM (SELECT event_index, {size} AS n "
                                f"FROM {src})").fetchall()
        finally:
            con.close()
    except duckdb.Error:
        return ""
    if not found or (found[0][1] or 0) < 2**20:  # only an event that explains the memory
        return ""
    return f"; its largest event is event #{found[0][0]:,} of traceEvents ({found[0][1] / 2**20:,.1f} MB of text)"


def _drop_finished(run_dir: str, file_name: str) -> None:
    """What a failed partition wrote of its finish rules (the ones done before the one that failed)."""
    for name in FINISHED:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(facts_dir(run_dir, name), file_name))


FINISH_MEMORY_STEPS = 3  # a one-rank partition out of memory tries again with 4x, then 16x the budget


def _finish_chunk(run_dir: str, ranks: list[int], file_name: str, memory_mb: int | None = None) -> None:
    """The finish of ``ranks``; out of memory (a few very heavy ranks: 43M events on 8 ranks), the
    partition is split in two, down to one rank, and a rank alone tries again with 4x, then 16x the
    budget, never more than half the machine's memory: the rows are the same, only the work's size
    changes (the rules partition by rank)."""
    memory_mb = memory_mb or derive_memory_mb()
    try:
        _finish_part(run_dir, ranks, file_name, memory_mb)
        return
    except _FinishOutOfMemory:
        _drop_finished(run_dir, file_name)
        if len(ranks) > 1:
            half = len(ranks) // 2
            for part in (ranks[:half], ranks[half:]):
                _finish_chunk(run_dir, part, _part_name(part), memory_mb)
            return
        bigger = min(memory_mb * 4, _half_memory_mb())
        if bigger <= memory_mb or memory_mb >= derive_memory_mb() * 4 ** (FINISH_MEMORY_STEPS - 1):
            raise
    _finish_chunk(run_dir, ranks, file_name, bigger)


def _half_memory_mb() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2 // 2**20
    except (ValueError, OSError, AttributeError):
        return 4096


def _finish_part(run_dir: str, ranks: list[int], file_name: str, memory_mb: int | None = None) -> None:
    lo, hi = ranks[0], ranks[-1]
    events = "events" in _finish_uses()
    spill = os.path.join(run_dir, f"_spill-finish-{lo}")
    with _facts_connection(1, spill, [f for r in ranks for f in rank_parts(run_dir, r)] if events else [],
                           memory_mb=memory_mb) as con:
        if events:
            bind_events(con, run_dir, ranks=(lo, hi))
        bind_tables(con, run_dir, materialize=True)
        define_base(con)
        for name in FACTS + REDUCED + [CLOCKS]:  # the partition's ranks of each table with a rank; the rest whole
            bind_fact(con, run_dir, name)
            if "rank" in {c for c, *_ in con.execute(f"DESCRIBE {name}").fetchall()}:
                con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet("
                            f"{sql_string(facts_glob(run_dir, name))}, union_by_name = true) "
                            f"WHERE rank BETWEEN {int(lo)} AND {int(hi)}")
        for name in views_for(FINISHED):
            con.execute(_sql.load("views", name).text)

        _materialize_all(con, FINISHED, lambda name: os.path.join(facts_dir(run_dir, name), file_name),
                         _finish_fail(run_dir, lo, hi), stream=True)


def _finish_uses() -> set[str]:
    return {u for n in FINISHED + views_for(FINISHED) for u in uses(n)}
