"""Open a run directory for reading: a DuckDB connection with the Parquet tables and the public views.

Opening never writes to the run (a read-only run opens anywhere): a run whose facts were derived by other
rules than this tracekit's is refused, with the command that derives them again (``tracekit ingest
--rederive``, which goes through the run's writer lock and version switch, as ingest does)."""

from __future__ import annotations

import os
import shutil

import duckdb
import pyarrow as pa

from . import sql_files as _sql
from .errors import QueryError, RunError
from .layout.bind import bind_events, bind_fact, bind_tables
from .layout.damage import again, damaged, events_missing, rank_without_events
from .layout.manifest import open_manifest
from .layout.objstore import is_store_url
from .layout.paths import EVENTS_DIR, refuse_url
from .layout.versions import pin
from .query_errors import describe
from .rules import TABLE_NAMES, VIEWS, define_base, facts_key, graph, references, stored, uses
from .sandbox import DEFAULT_TIMEOUT_S
from .words import plural

_NEED_EVENTS = "raw events, the dependency graph: replay, critical_path, advise's savings"


class Run:
    """A run directory opened for SQL. ``.sql(query, params)`` -> pyarrow.Table; ``.con`` is DuckDB."""

    def __init__(self, path: str, size_buckets: list[int] | None = None):
        self.name = os.fspath(path)  # the run as the user names it, in messages (traces for a cached run)
        self.fetched = None  # a run in an object store: what opening it fetched into the cache (bytes, files, s)
        if is_store_url(self.name):  # its live version fetched into the cache, read there (layout/remote.py)
            from .layout.remote import fetch

            path, self.fetched = fetch(self.name)
        refuse_url(os.fspath(path), RunError)
        self.directory = os.path.abspath(path)  # the run directory (RUN/CURRENT names its live version)
        self.size_buckets = size_buckets
        # the version it reads (RUN/versions/v-...), pinned by a shared lock while this Run lives: a reader
        # keeps it whatever replaces the run, and cache eviction and clear leave it alone
        self.version, self._hold = pin(os.path.realpath(path))
        if self._hold is not None:
            import weakref
            self._release = weakref.finalize(self, os.close, self._hold)
        self.manifest = open_manifest(self.version, self.name)
        if self.manifest.get("facts_key") != facts_key():
            fix = (f"ingest the traces into {self.name} again (or reduce its parts again)" if self.fetched is not None
                   else f"derive them again from its events with `tracekit ingest --rederive {path}`")
            raise RunError(f"{self.name}: its facts were derived by other rules than this tracekit's; {fix}")
        self._db: duckdb.DuckDBPyConnection | None = None  # connected on first use (an ingest need not)
        self._created: set[str] = set()
        self._cursors: set = set()  # those of batches() still being read
        self._children: set = set()  # the processes of a read-only Run's queries still running (sql_process)
        self._limits: tuple | None = None  # a read-only Run's (memory_mb, timeout) for those processes

    @property
    def _con(self) -> duckdb.DuckDBPyConnection:
        if self._db is None:
            self._db = duckdb.connect()
            # no progress bar: DuckDB draws it on stdout, into the data of a long query piped elsewhere
            self._db.execute("SET enable_progress_bar = false")
            # a query past the memory limit spills to a private directory (made only then, removed on close):
            # by default DuckDB writes ./.tmp, into the run itself when a user stands in it
            import weakref

            from .spill import spill_dir

            spill = spill_dir("tracekit-spill-")
            self._db.execute("SET temp_directory = ?", [spill])
            self._remove_own_spill = weakref.finalize(self, shutil.rmtree, spill, True)
            # events is bound when a query names it (_ensure_view): binding it lists every rank's folder,
            # which a report reading the stored facts never needs
            with self._damaged("its traces or process groups table", again(self.manifest)):
                bind_tables(self._db, self.version)
            define_base(self._db, self.size_buckets)
            self._db.execute(_sql.load("", "words").text)  # tk_plural ..., for the reports' sentences
        return self._db

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection, with every table and view of the run defined."""
        for name in ["events", *VIEWS]:
            self._ensure_view(name)
        return self._con

    def execute(self, query: str, params=None) -> duckdb.DuckDBPyConnection:
        """``query`` on the connection, with only the views it names defined (``con`` defines every view):
        DuckDB's cursor, to fetch from as it goes."""
        self._define_for(query)
        # (a query of a rank's own files: timeline)
        with self._damaged("its events", again(self.manifest), within=EVENTS_DIR):
            return self._con.execute(query, params) if params else self._con.execute(query)

    def _define_for(self, query: str) -> None:
        # events when named outside a string: binding it lists every rank's folder, and a query of a few
        # ranks' own files names their paths (.../events/rank=R/...)
        in_code = set(references(query, strings=False))
        for name in _sql.names_in(query, ["events"], strings=False) + references(query):
            if name in in_code or name == "events":
                self._ensure_view(name)
                continue
            try:  # named only inside a string (a word of a message): defined if it can be, as DuckDB may read it
                self._ensure_view(name)
            except RunError:
                pass

    def _ensure_view(self, name: str) -> None:
        """Define a view (after the views it uses) on first use: binding a view costs DuckDB time and
        memory on big runs, so a query only pays for the views it names."""
        if name in self._created:
            return
        if name == "events":
            self.fetch_events()
            self._check_every_rank_has_events()
            with self._damaged("its events", again(self.manifest), within=EVENTS_DIR):  # (one cut short)
                try:
                    bind_events(self._con, self.version)
                except duckdb.IOException:  # a copy of the run without its events files (facts alone answer most)
                    raise RunError(f"{self.name}: the run's events files are not here ({self.version}/events); "
                                   f"what needs them ({_NEED_EVENTS}) cannot answer: copy the whole run, or ingest "
                                   "the traces again") from None
            self._created.add(name)
            return
        if stored(name):
            with self._damaged(f"its {name} facts", "derive the facts again from its events with `tracekit ingest "
                                                    f"--rederive {self.name}`"):
                bind_fact(self._con, self.version, name)
            self._created.add(name)
            return
        for dep in uses(name):  # what its header declares: rules, stored facts and events (tables are there already)
            if dep in graph() or stored(dep) or dep == "events":
                self._ensure_view(dep)
        self._con.execute(_sql.rule(name).text)
        self._created.add(name)

    def fetch_events(self) -> None:
        """A version fetched from an object store holds its events once a query needs them (layout/remote.py):
        fetched now if they are not here yet (what it cost added to ``fetched``)."""
        from .layout.remote import EVENTS_PENDING, fetch_events

        if os.path.exists(os.path.join(self.version, EVENTS_PENDING)):
            got = fetch_events(self.version, self.name)
            if got and self.fetched is not None:
                self.fetched["events_bytes"] = self.fetched.get("events_bytes", 0) + got["bytes"]
                self.fetched["events_files"] = self.fetched.get("events_files", 0) + got["files"]

    def _check_every_rank_has_events(self) -> None:
        """Each rank of the run has its events folder: one deleted by hand would make the graph replay that
        rank from nothing, with no word why."""

        ranks = (r for (r,) in self._con.execute("SELECT rank FROM traces ORDER BY rank").fetchall())
        rank = rank_without_events(self.version, ranks)
        if rank is not None:
            raise events_missing(self.name, self.version, rank, f"what needs them ({_NEED_EVENTS}) cannot answer",
                                 again(self.manifest))

    def _damaged(self, what: str, fix: str, within: str | None = None):
        """A file of the run that DuckDB cannot read (removed or cut short by hand): one line naming it, and
        the command that makes it again (layout/damage.py). (Tracekit's own statement on its own files: only
        their damage fails it; ``within``: an error naming a file in that folder of the version only.)"""
        return damaged(self.name, self.version, what, fix, (duckdb.Error,),
                       within=None if within is None else os.path.join(self.version, within))

    def read_only(self, memory_mb: int | None = None, timeout: float | None = DEFAULT_TIMEOUT_S) -> "Run":
        """Close the doors for SQL from an untrusted prompt, as ``tracekit sql`` does unless --unsafe: only
        SELECT statements (and EXPLAIN of one); no file outside the run can be read, no extension installed
        or loaded, spills in a private directory, the configuration locked so that no statement can open
        them again (see tracekit.sandbox). ``.sql()`` and ``.batches()`` then run each query in a process of
        its own held to ``memory_mb`` (default 2048) and ``timeout`` seconds (None or 0: no limit), as the
        command's (sql_process): this process's memory is not the query's to cap. ``.con`` stays in this
        process, with DuckDB's memory limit only. ``Run.sql()`` on a Run not made read-only runs any
        statement: it is the Python API, for SQL you trust."""
        self.lock_down(memory_mb)
        self._limits = (memory_mb, timeout)
        return self

    def lock_down(self, memory_mb: int | None = None) -> "Run":
        """The read-only limits on this Run's own connection (the query runs in this process)."""
        import weakref

        from . import sandbox

        for name in ["events", *VIEWS]:
            self._ensure_view(name)
        spill = sandbox.lock_down(self._con, self.version, memory_mb)
        self._remove_spill = weakref.finalize(self, sandbox.remove_spill, spill)  # on close, or when collected
        self._read_only = True
        return self

    def sql(self, query: str, params=None) -> pa.Table:
        if self._limits:
            schema, batches = self.batches(query, params=params)
            return pa.Table.from_batches(list(batches), schema=schema)
        rel = self._relation(query, params)
        if rel is None:  # a statement without a result (CREATE VIEW ...)
            return pa.table({})
        try:
            return rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()
        except duckdb.Error as exc:
            raise QueryError(f"SQL failed on run {self.name}: {describe(str(exc), TABLE_NAMES + VIEWS)}") from None

    def batches(self, query: str, rows: int = 65536, params=None):
        """The result of ``query`` as Arrow record batches of ``rows`` rows, read as they are consumed (a
        result bigger than memory streams through): (schema, iterator of pyarrow.RecordBatch). It runs on
        a cursor of its own: the Run answers other queries meanwhile (on a read-only Run: in a limited
        process of its own)."""
        if self._limits:
            from .sandbox import check_statements
            from .sql_process import batches

            check_statements(query)  # (here too: refused without starting a process)
            return batches(self, query, params, *self._limits)
        cur = self._con.cursor()
        self._cursors.add(cur)
        rel = self._relation(query, params=params, con=cur)
        if rel is None:
            return pa.schema([]), iter(())
        try:
            reader = rel.to_arrow_reader(rows) if hasattr(rel, "to_arrow_reader") else rel.fetch_record_batch(rows)
        except duckdb.InterruptException:
            raise
        except duckdb.Error as exc:
            raise QueryError(f"SQL failed on run {self.name}: {describe(str(exc), TABLE_NAMES + VIEWS)}") from None

        def each():
            try:
                yield from reader
            except duckdb.InterruptException:
                raise
            except (duckdb.Error, pa.ArrowException, OSError) as exc:  # (DuckDB's error, through Arrow's stream)
                if str(exc).startswith("INTERRUPT"):
                    raise duckdb.InterruptException(str(exc)) from None
                raise QueryError(f"SQL failed on run {self.version}: {str(exc).splitlines()[0]}") from None
            finally:
                self._cursors.discard(cur)
                cur.close()
        return reader.schema, each()

    def _relation(self, query: str, params=None, con=None):
        if getattr(self, "_read_only", False):
            from .sandbox import check_statements
            check_statements(query)
        self._define_for(query)
        try:
            return (con or self._con).sql(query, params=params)
        except duckdb.InterruptException:
            raise
        except duckdb.Error as exc:
            raise QueryError(f"SQL failed on run {self.name}: {describe(str(exc), TABLE_NAMES + VIEWS)}") from None

    def __repr__(self) -> str:
        inputs = self.manifest.get("inputs", [])
        events = sum(i.get("events", 0) for i in inputs)
        ranks = sorted(i.get("rank") for i in inputs)
        shown = ", ".join(map(str, ranks[:8])) + (", ..." if len(ranks) > 8 else "")
        return (f"Run({self.name!r}: {plural(len(ranks), 'rank', 'ranks')} [{shown}], "
                f"{plural(events, 'event', 'events')}, {plural(len(inputs), 'input', 'inputs')})")

    def _repr_html_(self) -> str:
        """In Jupyter: the run's identity, its summary and the doctor's findings."""
        from .html_tables import notebook_html

        return notebook_html(self)

    @property
    def ranks(self) -> list[int]:
        return [r for (r,) in self._con.execute("SELECT rank FROM traces ORDER BY rank").fetchall()]

    def interrupt(self) -> None:
        """Stop the query running on this Run (from another thread): it raises duckdb.InterruptException."""
        if self._db is not None:
            self._db.interrupt()
        for cur in list(self._cursors):
            cur.interrupt()
        for child in list(self._children):
            child.kill()

    def close(self) -> None:
        if getattr(self, "_release", None):
            self._release()
        if self._db is not None:
            self._db.close()
        if getattr(self, "_remove_spill", None):
            self._remove_spill()
        if getattr(self, "_remove_own_spill", None):
            self._remove_own_spill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

