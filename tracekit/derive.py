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
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from . import settings
from . import sql_files as _sql
from .compact import RANKS_PER_FILE, compact, partition
from .errors import TracekitError
from .layout.bind import bind_events, bind_fact, bind_tables, rank_events, read_events, sql_string
from .layout.paths import (
    events_files,
    facts_dir,
    facts_file,
    facts_glob,
    make_leaf_dir,
    rank_parts,
    ranks_file,
    spill_dir,
    table_path,
)
from .materialize import materialize_all
from .rules import CLOCKS, FACTS, FINISHED, ORDER, RANK_FINISH, REDUCED, define_base, stored, uses, views_for
from .run_tables import PG_SCHEMA, TRACES_SCHEMA, rows_table
from .words import plural


def _materialize(con, names, parquet_of, fail, **options) -> set[str]:
    """materialize.materialize_all with this tracekit's rule of what a run stores (rules.stored)."""
    return materialize_all(con, names, parquet_of, fail, stored, **options)


def derive_rank(events_parquet: str | list[str], rank: int, trace: dict, process_groups: list[dict], out_dir: str,
                threads: int = 1, reduced: bool = False, finish_dir: str | None = None) -> list[str]:
    """Run the per-rank rules on one rank's events and write ``out_dir/NAME.parquet`` for each fact
    (with ``threads`` DuckDB threads: the cores this file has to itself). ``reduced``: the run has this
    rank only, so its cross-rank facts are derived here too, on the same connection. ``finish_dir``: the
    finish's per-rank tables (RANK_FINISH) too, into ``finish_dir/NAME.parquet`` (a rank part's: the reduce
    reads them, not derives them); returns the names written there (none where they ran out of memory:
    the reduce derives them then)."""
    make_leaf_dir(out_dir)
    files = [events_parquet] if isinstance(events_parquet, str) else list(events_parquet)
    with _facts_connection(threads, spill_dir(out_dir), files) as con:
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
                                 "file")

        def parquet_of(name):
            return os.path.join(out_dir, name + ".parquet")

        if not reduced:
            _materialize(con, FACTS, parquet_of, fail, stream=True)
            return _rank_finish(con, finish_dir, trace.get("path") or out_dir, rank) if finish_dir else []
        # the run is this rank: its cross-rank facts and its finish in the same pass as its facts, each as
        # soon as what it reads is there (collective_waits beside comm_segments, the lead-ups beside
        # comm_overlap); its one host needs no clock offset, so the cross-rank facts are final at once
        _no_offsets(con)
        rules = set(FACTS + REDUCED + FINISHED + views_for(REDUCED + FINISHED))
        finish_fail = _finish_fail(trace.get("path"), rank, rank)
        given_up = _materialize(con, [n for n in ORDER if n in rules], parquet_of,
                                    lambda name, exc: (finish_fail if name in FINISHED else fail)(name, exc),
                                    optional=frozenset(FINISHED), give_up=(_FinishOutOfMemory,), stream=True)
        if given_up:  # out of memory beside the facts: reduce_run derives the finish again (finish_run)
            _unlink_finish(parquet_of)
        # clock_offsets: one trace is one host, whose offset is 0 (clocks.estimate reads only `traces` for
        # it), so nothing is derived again on aligned clocks
        if _write_offsets(con, parquet_of):
            raise AssertionError(f"{trace.get('path')}: a run of one trace was given a clock offset")
        return []


def _rank_finish(con: duckdb.DuckDBPyConnection, out_dir: str, path: str, rank: int) -> list[str]:
    """The finish's per-rank tables (RANK_FINISH) of the rank on ``con`` (its facts there) into
    ``out_dir/NAME.parquet``; those written (none where they ran out of memory: the reduce's finish
    derives them then, with its larger budgets)."""
    make_leaf_dir(out_dir)
    for name in views_for(RANK_FINISH):
        con.execute(_sql.rule(name).text)

    def parquet_of(name):
        return os.path.join(out_dir, name + ".parquet")

    given_up = materialize_all(con, RANK_FINISH, parquet_of, _finish_fail(path, rank, rank), lambda name: True,
                               optional=frozenset(RANK_FINISH), give_up=(_FinishOutOfMemory,), stream=True)
    if given_up:
        for name in RANK_FINISH:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(parquet_of(name))
        return []
    return list(RANK_FINISH)


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
    with _facts_connection(threads, spill_dir(out_dir), [f for fs, *_ in items for f in fs]) as con:
        con.execute("CREATE VIEW events AS " + " UNION ALL ".join(
            rank_events(files, rank) for files, rank, _, _ in items))
        con.register("_traces", rows_table([t for _, _, t, _ in items], TRACES_SCHEMA))
        con.register("_pgs", rows_table([p for *_, pgs in items for p in pgs], PG_SCHEMA))
        con.execute("CREATE TABLE traces AS SELECT * FROM _traces")
        con.execute("CREATE TABLE process_groups AS SELECT * FROM _pgs")
        define_base(con)
        ranks = [r for _, r, _, _ in items]
        _materialize(con, FACTS, lambda name: os.path.join(out_dir, name + ".parquet"),
                         lambda name, exc: TracekitError(f"ranks {min(ranks)}-{max(ranks)}: could not derive their "
                                                         f"{name.lstrip('_')}: {str(exc).splitlines()[0]}"),
                         stream=True)


def derive_run(run_dir: str, threads: int = 1, align: bool = True, timings: dict | None = None) -> None:
    """Every rank's facts at once, in one connection, straight to facts/NAME/all.parquet: for a run of
    small files, where setting up a connection and planning the rules per rank costs more than the work
    (the rules partition by rank: the rows are those derive_rank gives, rank by rank)."""
    files = events_files(run_dir)
    with _facts_connection(threads, spill_dir(run_dir), files) as con:
        bind_events(con, run_dir)
        bind_tables(con, run_dir, materialize=True)
        define_base(con)
        for name in FACTS + REDUCED + [CLOCKS]:
            os.makedirs(facts_dir(run_dir, name), exist_ok=True)
        def fail(name, exc):
            return TracekitError(f"{run_dir}: could not derive its {name.lstrip('_')}: {str(exc).splitlines()[0]}")

        def parquet_of(name):
            return facts_file(run_dir, name)

        _materialize(con, FACTS, parquet_of, fail)
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
        con.execute(_sql.rule(name).text)
    try:
        _materialize(con, FINISHED, parquet_of, fail)
    except _FinishOutOfMemory:
        _unlink_finish(parquet_of)


def _unlink_finish(parquet_of) -> None:
    for name in FINISHED:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(parquet_of(name))


def reduce_on(con: duckdb.DuckDBPyConnection, parquet_of, fail, align: bool = True,
              timings: dict | None = None) -> None:
    """The cross-rank facts on a connection that has traces and _collectives, each derived once, on the
    clock that stays: first each host's clock offset (tracekit.clocks), from the facts it reads
    (clocks.READS) as views on raw clocks, so that only what the estimate reads of them is computed (its
    instances' ends and status: at 4,096 ranks 1.0 s, where the two tables took 1.5 s, then were derived
    again on the aligned clock); written as clock_offsets, which the views then read; then every
    cross-rank fact, on the aligned clock where a host's clock needed a correction, else on raw clocks.
    The rules no clock changes (CLOCK_FREE: trace_versions) first, beside the estimate. Ranks timed on
    clocks of different origins are refused first (clocks.check_one_clock)."""
    from .clocks import READS, check_one_clock

    check_one_clock(con)
    _no_offsets(con)
    for name in views_for(REDUCED):  # the views the reduce rules read (rank_clocks, _collectives_aligned)
        con.execute(_sql.rule(name).text)
    timings = {} if timings is None else timings
    start = time.perf_counter()
    _materialize(con, CLOCK_FREE, parquet_of, fail)
    for name in READS:  # views: the estimate computes only what it reads of them
        con.execute(_sql.rule(name).text)
    _write_offsets(con, parquet_of, align)
    for name in reversed(READS):
        con.execute(f"DROP VIEW {name}")
    timings["align_s"] = round(time.perf_counter() - start, 3)  # the estimate (and the rules no clock changes)
    start = time.perf_counter()
    _materialize(con, [n for n in REDUCED if n not in CLOCK_FREE], parquet_of, fail)
    timings["cross_rank_s"] = round(time.perf_counter() - start, 3)


def _reads_clock(name: str) -> bool:
    """Rule ``name`` reads clock_offsets, itself or through the rules and views it reads."""
    from .rules import graph

    todo, seen = [name], {name}
    while todo:
        for u in graph()[todo.pop()].uses:
            if u == CLOCKS:
                return True
            if u in graph() and u not in seen:
                seen.add(u)
                todo.append(u)
    return False


CLOCK_FREE = [n for n in REDUCED if not _reads_clock(n)]  # the cross-rank rules no clock correction changes


def _no_offsets(con: duckdb.DuckDBPyConnection) -> None:
    """clock_offsets with no row: every rank on its raw clock (the cross-rank facts' first pass)."""
    from . import clocks

    con.register("_no_offsets", rows_table([], clocks.OFFSETS_SCHEMA))
    con.execute(f"CREATE OR REPLACE TABLE {CLOCKS} AS SELECT * FROM _no_offsets")
    con.unregister("_no_offsets")


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

    files = [os.fspath(f) for f in files]
    if len(files) > 1:  # one query over every file's metadata (a file at a time: 1.8 ms each, 256 ranks a finish)
        con = duckdb.connect(config={"threads": 1})
        try:
            (big,), = con.execute(f"SELECT coalesce(max(total_uncompressed_size) FILTER (WHERE type = 'BYTE_ARRAY'), "
                                  f"0) FROM parquet_metadata([{', '.join(map(sql_string, files))}])").fetchall()
            return 0 if big < BIG_CHUNK else VALUE_COPIES * (big >> 20)
        except duckdb.Error:
            pass  # (a file that cannot be read: the others, one at a time, below)
        finally:
            con.close()
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


def reduce_run(run_dir: str, align: bool = True, timings: dict | None = None, compact_with=None) -> None:
    """The steps of a run after its per-rank facts, in order, each skipped where the map step already did it
    (a run of one rank, or one derived whole by derive_run): the per-rank facts compacted (compact_facts),
    the cross-rank facts on aligned clocks (cross_rank_facts, reading the compacted _collectives), the
    finish (finish_run). ``timings`` gets the seconds of each. ``compact_with``: the compaction, where the
    per-rank facts are kept outside the run (rank parts: ingestion/part_tables.py), returning the finish's
    per-rank tables it placed (finish_run's ``made``)."""
    timings = {} if timings is None else timings
    start = time.perf_counter()
    made = compact_with() if compact_with else compact_facts(run_dir)
    timings["compact_s"] = round(time.perf_counter() - start, 3)  # first: the cross-rank facts then read a few files
    if not all(os.path.isfile(facts_file(run_dir, name)) for name in REDUCED):
        cross_rank_facts(run_dir, align, timings)
    if not all(os.path.isfile(facts_file(run_dir, name)) for name in _FINISH_STORED):
        _timed(timings, "finish_s", finish_run, run_dir, None, made)


def _timed(timings: dict, key: str, step, *args) -> None:
    start = time.perf_counter()
    step(*args)
    timings[key] = round(time.perf_counter() - start, 3)


def cross_rank_facts(run_dir: str, align: bool = True, timings: dict | None = None) -> None:
    """The reduce: the cross-rank facts (matching, clock offsets, waits, stragglers) from every rank's
    _collectives, on clocks aligned across hosts (reduce_on)."""
    # (unbounded: its tables are held whole; at 4,096 ranks, 1.2 GB of DuckDB's memory, and 1 GB of budget
    # ran trace_versions out of memory beside them)
    con = duckdb.connect()
    try:
        bind_tables(con, run_dir, ("traces",))
        define_base(con)
        # read once (a file per rank where the ranks made their own parts), not by each pass of the rules; in
        # no particular order (no rule reads a table's order): DuckDB then inserts on every thread, 0.27 s
        # against 0.56 s at 4,096 ranks (1M rows)
        try:
            con.execute("SET preserve_insertion_order = false")
            con.execute(f"CREATE TABLE _collectives AS SELECT * FROM read_parquet("
                        f"{sql_string(facts_glob(run_dir, '_collectives'))}, union_by_name = true)")
            con.execute("RESET preserve_insertion_order")
        except duckdb.Error as exc:
            raise TracekitError(f"{run_dir}: could not read its collectives: {str(exc).splitlines()[0]}") from None
        for name in REDUCED + [CLOCKS]:
            os.makedirs(facts_dir(run_dir, name), exist_ok=True)
        reduce_on(con, lambda name: facts_file(run_dir, name),
                  lambda name, exc: TracekitError(f"{run_dir}: could not derive its {name}: "
                                                  f"{str(exc).splitlines()[0]}"), align, timings)
    finally:
        con.close()


def compact_facts(run_dir: str) -> None:
    """The per-rank facts joined, up to 256 ranks a file (tracekit.compact: a query then opens a few
    files, not one per rank)."""
    compact([facts_dir(run_dir, name) for name in FACTS])


# A run of several files smaller than this in all derives its facts once, for every rank together, at
# the end (derive_run), at ingest and at --rederive alike: per rank, the fixed cost of a DuckDB connection
# and of planning the rules would be most of the work.
SMALL_RUN_BYTES = 64 << 20

_FINISH_STORED = [n for n in FINISHED if stored(n)]  # the finish tables written to the run


FINISH_RANKS = RANKS_PER_FILE  # ranks in one partition of the finish (the compacted facts' partitions)


def finish_run(run_dir: str, workers: int | None = None, made: dict | None = None) -> None:
    """The finish rules (tracekit/sql/finish) of a run whose facts and cross-rank facts are in place: up to
    FINISH_RANKS ranks at a time (facts/NAME/all.parquet when that is every rank, else
    facts/NAME/ranks-LO-HI.parquet, as compaction names them), each partition on a connection of its own
    with one thread and derive_memory_mb() of memory, ``workers`` side by side (default: every core). The
    rules partition by rank, so the rows are those of one pass over every rank; the work is never one, and
    its memory does not grow with the ranks. ``made``: {rule of RANK_FINISH: {rank: a file holding its rows}},
    the rows the ranks' parts derived (a partition whose every rank has them reads them, not derives them)."""
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
        for fut in [pool.submit(_finish_chunk, run_dir, c, f, None, made) for c, f in jobs]:
            fut.result()


def _part_name(ranks: list[int]) -> str:
    return ranks_file(ranks[0], ranks[-1])


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
    files = _files_of(run_dir, range(lo, hi + 1)) if os.path.isdir(run_dir) else []
    if not files or hi - lo > 64:
        return ""
    try:
        con = duckdb.connect(config={"threads": 1, "memory_limit": "256MB"})
        try:
            src = read_events(files)
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


def _files_of(run_dir: str, ranks) -> list[str]:
    """The events files of ``ranks`` (a packed file of several once)."""
    return list(dict.fromkeys(f for r in ranks for f in rank_parts(run_dir, r)))


def _drop_finished(run_dir: str, file_name: str) -> None:
    """What a failed partition wrote of its finish rules (the ones done before the one that failed)."""
    for name in FINISHED:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(facts_dir(run_dir, name), file_name))


FINISH_MEMORY_STEPS = 3  # a one-rank partition out of memory tries again with 4x, then 16x the budget


def _finish_chunk(run_dir: str, ranks: list[int], file_name: str, memory_mb: int | None = None,
                  made: dict | None = None) -> None:
    """The finish of ``ranks``; out of memory (a few very heavy ranks: 43M events on 8 ranks), the
    partition is split in two, down to one rank, and a rank alone tries again with 4x, then 16x the
    budget, never more than half the machine's memory: the rows are the same, only the work's size
    changes (the rules partition by rank)."""
    memory_mb = memory_mb or derive_memory_mb()
    try:
        _finish_part(run_dir, ranks, file_name, memory_mb, made)
        return
    except _FinishOutOfMemory:
        _drop_finished(run_dir, file_name)
        if len(ranks) > 1:
            half = len(ranks) // 2
            for part in (ranks[:half], ranks[half:]):
                _finish_chunk(run_dir, part, _part_name(part), memory_mb, made)
            return
        bigger = min(memory_mb * 4, _half_memory_mb())
        if bigger <= memory_mb or memory_mb >= derive_memory_mb() * 4 ** (FINISH_MEMORY_STEPS - 1):
            raise
    _finish_chunk(run_dir, ranks, file_name, bigger, made)


def _half_memory_mb() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2 // 2**20
    except (ValueError, OSError, AttributeError):
        return 4096


def _finish_part(run_dir: str, ranks: list[int], file_name: str, memory_mb: int | None = None,
                 made: dict | None = None) -> None:
    lo, hi = ranks[0], ranks[-1]
    made = made or {}
    given = [n for n in RANK_FINISH if n in made and all(r in made[n] for r in ranks)]
    todo = [n for n in FINISHED if n not in given]
    need = _finish_uses(todo)  # what the rules left to derive read, through their views too
    # the events only where a rule left to derive reads them (the parts made those that do: lead-ups):
    # binding them sizes the connection by their largest values, 0.14 s a partition at 4,096 ranks
    events = "events" in need
    spill = spill_dir(run_dir, f"finish-{lo}")
    with _facts_connection(1, spill, _files_of(run_dir, ranks) if events else [], memory_mb=memory_mb) as con:
        if events:
            bind_events(con, run_dir, ranks=(lo, hi))
        # traces read once, less its metadata (the whole trace header: 88 MB at 4,096 ranks); process_groups
        # only where a rule reads it, which none does (materialized, every rank's list of every group's ranks:
        # 0.25 s of each of 16 partitions at 4,096 ranks; the reduce of rank parts writes it beside the finish)
        con.execute(f"CREATE TABLE traces AS SELECT * EXCLUDE (metadata) FROM "
                    f"read_parquet({sql_string(table_path(run_dir, 'traces'))})")
        if "process_groups" in need:
            bind_tables(con, run_dir, ("process_groups",))
        define_base(con)
        # the partition's ranks of each table with a rank; the rest whole. Only the tables the rules left to
        # derive read: where the parts made the others, 3 of 22 (each bound and described: 0.05 s a partition)
        for name in [n for n in FACTS + REDUCED + [CLOCKS] if n in need]:
            bind_fact(con, run_dir, name)
            if "rank" in {c for c, *_ in con.execute(f"DESCRIBE {name}").fetchall()}:
                con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet("
                            f"{sql_string(facts_glob(run_dir, name))}, union_by_name = true) "
                            f"WHERE rank BETWEEN {int(lo)} AND {int(hi)}")
        for name in views_for(todo):
            con.execute(_sql.rule(name).text)
        # the partition's rows of the per-rank tables its ranks' parts derived (joined by the compaction)
        for name in given:
            files = ", ".join(map(sql_string, dict.fromkeys(made[name][r] for r in ranks)))
            con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet([{files}]) "
                        f"WHERE rank BETWEEN {int(lo)} AND {int(hi)}")

        _materialize(con, todo,
                     lambda name: os.path.join(facts_dir(run_dir, name), file_name),
                     _finish_fail(run_dir, lo, hi), stream=True)


def _finish_uses(names: list[str] | None = None) -> set[str]:
    """What the finish rules ``names`` (default: every one) and the views they need read."""
    names = FINISHED if names is None else names
    return {u for n in names + views_for(names) for u in uses(n)}
