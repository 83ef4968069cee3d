"""Rules made into tables or files on one DuckDB connection, each as soon as the rules it reads are made:
the scheduler of derive (tracekit/derive.py says which rules, on which connection, into which files).

The order is graphlib's topological order of the rules' ``-- @uses``; of the rules ready at once, the one
with the longest chain of rules waiting for it runs first, two at a time, the Parquet writes on a third
cursor. A rule that runs out of memory beside another runs again alone; one that runs out of memory reading
files runs again from tables; an optional rule's error of a kind to give up on gives it up, with what waits
for it.
"""

from __future__ import annotations

import functools
import graphlib
import os
import queue
import shutil
import tempfile
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import duckdb

from . import sql_files as _sql
from .errors import TracekitError, disk_error
from .layout.bind import sql_string

RULES_AT_ONCE = 2  # rules run at once on the connection (each beside the Parquet writes)


@functools.lru_cache(maxsize=None)
def _is_view(name: str) -> bool:
    """Rule ``name`` is a view (``-- @stage view``): defined on the connection, never a table or a file."""
    return _sql.rule(name).stage == "view"


@functools.lru_cache(maxsize=None)
def _uses(name: str) -> tuple[str, ...]:
    """What rule ``name`` declares it reads (its ``-- @uses``)."""
    return tuple(_sql.rule(name).uses)


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
    text = _sql.rule(name).text
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
    if _is_view(name):  # a view the next rules read: defined, not made a table
        return _sql.rule(name).text
    return f"CREATE TABLE {name} AS\n{_rule_query(name)}"


def _write(cur: duckdb.DuckDBPyConnection, name: str, path: str) -> None:
    """Table ``name`` to the Parquet file ``path``."""
    cur.execute(f"COPY {name} TO {sql_string(path)} (FORMAT parquet)")


def materialize_all(con: duckdb.DuckDBPyConnection, names: list[str], parquet_of, fail, stored,
                    optional: frozenset = frozenset(), give_up: tuple = (), stream: bool = False) -> set[str]:
    """Run each fact's .sql once into a table of its name (the rules after it read the table, not the rule
    again) and write it to ``parquet_of(name)``: each as soon as the facts its rule uses are tables, two rules
    at once (of those ready, the one with the longest chain of rules waiting for it first) and the Parquet
    writes on a third cursor: most of these queries run on one core (their inputs
    are smaller than DuckDB's unit of parallelism), so independent facts (gpu_kernels and comm_ops) and the
    writes of finished facts proceed beside the next rule. A view rule among ``names`` (a one-rank run's
    reduce reads rank_clocks and _collectives_aligned) is defined once what it reads is there, never stored.
    ``fail(name, exc)`` turns a DuckDB error into ours; ``stored(name)``: the rule's rows are kept in the run
    (rules.stored), else it is a table of this connection only. A rule of ``optional`` whose error becomes one of
    ``give_up`` is given up, with the rules that wait for it, and the others go on: returns those given up
    (a one-rank run's finish, out of memory beside its facts, is derived again by finish_run).
    ``stream``: the caller reads none of these tables afterwards, so no rule's rows are held as a table:
    each stored fact goes straight to its file (COPY of the rule's query), a scratch table of the finish to
    a file beside the connection's spill directory (removed at the end), and the rules after them read the
    files. Tables share DuckDB's memory budget with the rules: on a big trace they went past it, and DuckDB
    wrote them out to its spill files and read them back; a scratch table held beside a rule retried alone
    made that rule run out of memory again."""
    deps = {n: [u for u in _uses(n) if u in names] for n in names}
    below = _chain_lengths(names, deps)
    order = graphlib.TopologicalSorter(deps)
    order.prepare()
    ready: set[str] = set()  # rules whose inputs are made, not yet running (one to run again: back here)
    created: set[str] = set()
    given_up: set[str] = set()
    # streamed: each rule's rows straight to a file, read from there by the rules after it
    direct = {n for n in names if not _is_view(n)} if stream else set()
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
    for _ in range(RULES_AT_ONCE):
        rule_cursors.put(con.cursor())
    write_cursor = con.cursor()

    def run(cur, name):
        if name in direct:
            _write_rule(cur, name, parquet_of(name) if stored(name) else os.path.join(scratch, name + ".parquet"))
        else:
            _create(cur, name)

    def create(name):
        cur = rule_cursors.get()
        if cur is None:  # the pools were left (an interrupt): no rule starts any more
            return
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
        with ThreadPoolExecutor(max_workers=RULES_AT_ONCE) as pool, ThreadPoolExecutor(max_workers=1) as writes:
            try:
                while len(created) + len(given_up) < len(names):
                    ready.update(order.get_ready())
                    for n in sorted(ready - given_up, key=lambda n: (-below[n], names.index(n))):  # longest chain first
                        if len(running) >= RULES_AT_ONCE:
                            break  # a rule is chosen when a worker is free, not queued behind others
                        if any(m in alone for m in running) or (n in alone and running):
                            continue  # a rule that ran out of memory beside another runs alone
                        if n in alone:
                            wait([f for _, f in copies])
                        ready.discard(n)
                        running[n] = pool.submit(create, n)
                    finished, _ = wait(list(running.values()), return_when=FIRST_COMPLETED)
                    for n, fut in list(running.items()):
                        if fut in finished:
                            if n not in alone and isinstance(fut.exception(), duckdb.OutOfMemoryException):
                                alone.add(n)  # two rules share the budget: this one again, with all of it
                                del running[n]
                                ready.add(n)
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
                                ready.add(n)
                                continue
                            del running[n]
                            if not settled(n, fut):
                                continue
                            created.add(n)
                            order.done(n)
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
    finally:
        # the pools are joined, unless an interrupt cut the join short or landed inside submit() after the
        # rule was queued (its thread then is in no pool's list to join): a rule that starts from here on
        # finds no cursor, returns at once, and never blocks the interpreter's exit waiting for one
        while True:
            try:
                cur = rule_cursors.get_nowait()
            except queue.Empty:
                break
            cur.close()
        for _ in range(RULES_AT_ONCE):
            rule_cursors.put(None)
        write_cursor.close()
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    return given_up


def _chain_lengths(names: list[str], deps: dict) -> dict[str, int]:
    """name -> the rules on the longest chain of rules that wait for it, itself included: of the rules
    ready at once, the one with the longest chain behind it runs first."""
    below: dict[str, int] = {}
    for n in reversed(list(graphlib.TopologicalSorter(deps).static_order())):
        below[n] = 1 + max((below[m] for m in names if n in deps[m]), default=0)
    return below
