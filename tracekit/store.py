"""Open a run directory: a DuckDB connection with the Parquet tables and the public views."""

from __future__ import annotations

import json
import os

import duckdb
import pyarrow as pa

from . import cache
from .errors import QueryError, RunError
from .ingestion.run_writer import MANIFEST
from .ingestion.schema import EVENT_COLUMNS, PG_COLUMNS, SCHEMA_VERSION, TRACE_COLUMNS
from . import sql as _sql
from .derive import CLOCKS, FACT_TABLES, FACTS, FACTS_DIR, REDUCED, define_base, facts_key, rederive_run, sql_string

# name -> (file pattern, columns doc). Parquet is the system of record; these are plain views.
TABLES = {
    "events": ("events/*/*.parquet", EVENT_COLUMNS,
               "every event of every trace, one row each, nothing dropped (plus rank from the partition)"),
    "traces": ("traces.parquet", TRACE_COLUMNS, "one row per ingested trace file"),
    "process_groups": ("process_groups.parquet", PG_COLUMNS,
                       "process groups from distributedInfo.pg_config, one row per (rank, group)"),
}
# The public views, in this order (later views may use earlier ones). Those in derive.FACTS were derived
# per rank at ingest, those in derive.REDUCED across ranks at its end, and are read from facts/; the
# others are computed here, from events (flows, thread_names, counters) or from the facts
# (collectives' size buckets, exposure labels).
VIEWS: list[str] = ["flows", "thread_names", "counters", "gpu_kernels", "steps", "comm_ops", "collectives",
                    "comm_intervals", "step_windows", "comm_segments", "comm_overlap", "comm_exposure", "collective_waits",
                    "collective_instances", "stragglers", "step_breakdown", "clock_offsets", "rank_clocks"]
_HELPERS = ["_collectives", "_comm_exposure"]


class Run:
    """A run directory opened for SQL. ``.sql(query, params)`` -> pyarrow.Table; ``.con`` is DuckDB."""

    def __init__(self, path: str, size_buckets: list[int] | None = None):
        self.directory = os.path.abspath(path)  # the run directory (a link to its current version)
        self.name = os.fspath(path)  # the run as the user names it, in messages (traces for a cached run)
        self.path = os.path.realpath(path)  # the version it reads: a reader keeps it, whatever replaces the run
        self.size_buckets = size_buckets
        if not os.path.exists(self.path):
            from .ingestion.guard import recover
            recover(self.path)
        manifest = os.path.join(self.path, MANIFEST)
        if not os.path.isfile(manifest):
            raise RunError(f"{path}: not a tracekit run (no {MANIFEST}); create one with "
                           f"`tracekit ingest TRACES -o {path}`")
        try:
            with open(manifest) as f:
                self.manifest = json.load(f)
            if not isinstance(self.manifest, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            raise RunError(f"{manifest}: damaged or unreadable ({exc}); ingest the traces again into this "
                           f"directory with --force, or into a new one") from None
        if self.manifest.get("schema_version") != SCHEMA_VERSION:
            raise RunError(f"{path}: run schema version {self.manifest.get('schema_version')} is not "
                           f"this tracekit's ({SCHEMA_VERSION}); re-ingest with `tracekit ingest ... --force`")
        if self.manifest.get("facts_key") != facts_key():
            import sys
            print(f"tracekit: {path}: its facts were derived by other rules than this tracekit's; "
                  "deriving them again from its events (what `tracekit ingest --rederive` does)", file=sys.stderr)
            rederive_run(self.path)
            with open(manifest) as f:
                self.manifest = json.load(f)
        # no progress bar: DuckDB draws it on stdout, into the data of a long query piped elsewhere
        self._con = duckdb.connect()
        self._con.execute("SET enable_progress_bar = false")
        self._created: set[str] = set()
        self._cursors: set = set()  # those of batches() still being read
        self._create_tables()

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection, with every table and view of the run defined."""
        for name in VIEWS:
            self._ensure_view(name)
        return self._con

    def _create_tables(self) -> None:
        glob = os.path.join(self.path, TABLES["events"][0])
        self._con.execute(
            f"CREATE VIEW events AS SELECT rank, * EXCLUDE (rank) FROM read_parquet({sql_string(glob)}, "
            "hive_partitioning = true, hive_types = {'rank': BIGINT})")
        for name in ("traces", "process_groups"):
            self._con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet("
                             f"{sql_string(os.path.join(self.path, TABLES[name][0]))})")
        define_base(self._con, self.size_buckets)

    def _ensure_view(self, name: str) -> None:
        """Define a view (after the views it uses) on first use: binding a view costs DuckDB time and
        memory on big runs, so a query only pays for the views it names."""
        if name in self._created:
            return
        if name in FACTS or name in REDUCED or name == CLOCKS:
            glob = os.path.join(self.path, FACTS_DIR, name, "*.parquet")
            self._con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet({sql_string(glob)}, union_by_name = true)")
            self._created.add(name)
            return
        text = _sql.load("views", name).text
        for dep in _references(text, exclude=name):
            self._ensure_view(dep)
        self._con.execute(text)
        self._created.add(name)

    def read_only(self, memory_mb: int | None = None) -> "Run":
        """Close the doors for SQL from an untrusted prompt (``tracekit sql`` does this unless --unsafe):
        only SELECT statements (and EXPLAIN of one); no file outside the run can be read, no extension
        installed or loaded, a memory limit, spills in a private directory, the configuration locked so
        that no statement can open them again (see tracekit.sandbox). ``Run.sql()`` on a Run not made
        read-only runs any statement: it is the Python API, for SQL you trust."""
        import weakref

        from . import sandbox

        for name in VIEWS:
            self._ensure_view(name)
        spill = sandbox.lock_down(self._con, self.path, memory_mb)
        self._remove_spill = weakref.finalize(self, sandbox.remove_spill, spill)  # on close, or when collected
        self._read_only = True
        return self

    def sql(self, query: str, params=None) -> pa.Table:
        rel = self._relation(query, params)
        if rel is None:  # a statement without a result (CREATE VIEW ...)
            return pa.table({})
        try:
            return rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()
        except duckdb.Error as exc:
            raise QueryError(f"SQL failed on run {self.path}: {exc}") from None

    def batches(self, query: str, rows: int = 65536):
        """The result of ``query`` as Arrow record batches of ``rows`` rows, read as they are consumed (a
        result bigger than memory streams through): (schema, iterator of pyarrow.RecordBatch). It runs on
        a cursor of its own: the Run answers other queries meanwhile."""
        cur = self._con.cursor()
        self._cursors.add(cur)
        rel = self._relation(query, con=cur)
        if rel is None:
            return pa.schema([]), iter(())
        try:
            reader = rel.to_arrow_reader(rows) if hasattr(rel, "to_arrow_reader") else rel.fetch_record_batch(rows)
        except duckdb.InterruptException:
            raise
        except duckdb.Error as exc:
            raise QueryError(f"SQL failed on run {self.path}: {exc}") from None

        def each():
            try:
                yield from reader
            except duckdb.InterruptException:
                raise
            except (duckdb.Error, pa.ArrowException, OSError) as exc:  # (DuckDB's error, through Arrow's stream)
                if str(exc).startswith("INTERRUPT"):
                    raise duckdb.InterruptException(str(exc)) from None
                raise QueryError(f"SQL failed on run {self.path}: {str(exc).splitlines()[0]}") from None
            finally:
                self._cursors.discard(cur)
                cur.close()
        return reader.schema, each()

    def _relation(self, query: str, params=None, con=None):
        if getattr(self, "_read_only", False):
            from .sandbox import check_statements
            check_statements(query)
        for name in _references(query):
            self._ensure_view(name)
        try:
            return (con or self._con).sql(query, params=params)
        except duckdb.InterruptException:
            raise
        except duckdb.Error as exc:
            from .query_errors import describe
            raise QueryError(f"SQL failed on run {self.name}: {describe(str(exc), list(TABLES) + VIEWS)}") from None

    def __repr__(self) -> str:
        inputs = self.manifest.get("inputs", [])
        events = sum(i.get("events", 0) for i in inputs)
        ranks = sorted(i.get("rank") for i in inputs)
        shown = ", ".join(map(str, ranks[:8])) + (", ..." if len(ranks) > 8 else "")
        return f"Run({self.name!r}: {len(ranks)} ranks [{shown}], {events:,} events, {len(inputs)} inputs)"

    def _repr_html_(self) -> str:
        """In Jupyter: the run's identity, its summary and the doctor's findings."""
        from .html_report import notebook_html

        return notebook_html(self)

    @property
    def ranks(self) -> list[int]:
        return [r for (r,) in self._con.execute("SELECT rank FROM traces ORDER BY rank").fetchall()]

    def interrupt(self) -> None:
        """Stop the query running on this Run (from another thread): it raises duckdb.InterruptException."""
        self._con.interrupt()
        for cur in list(self._cursors):
            cur.interrupt()

    def close(self) -> None:
        self._con.close()
        if getattr(self, "_remove_spill", None):
            self._remove_spill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _references(text: str, exclude: str | None = None) -> list[str]:
    """The public views a SQL text names (comments aside), in VIEWS order."""
    return [v for v in _sql.names_in(text, VIEWS + _HELPERS) if v != exclude]


def open_run(path, size_buckets: list[int] | None = None, **ingest_options) -> Run:
    """Open a run directory; a trace file, a directory of traces or a list of them is ingested into a
    cache directory first (reused while the inputs are unchanged)."""
    from .ingestion.run_writer import ingest_run

    paths = [os.fspath(p) for p in path] if isinstance(path, (list, tuple)) else [os.fspath(path)]
    if len(paths) == 1 and not os.path.exists(paths[0]):
        from .ingestion.guard import recover
        recover(os.path.abspath(paths[0]))  # an ingest that died mid-swap left the previous run beside it
    if len(paths) == 1 and os.path.isfile(os.path.join(paths[0], MANIFEST)):
        return Run(paths[0], size_buckets=size_buckets)
    out = cache.dir_for(paths)
    ingest_run(paths, out, **ingest_options)
    cache.touch(out)
    cache.enforce_cap(keep=out)
    run = Run(out, size_buckets=size_buckets)
    run.name = " ".join(paths)  # messages name the traces as the user gave them, not the cache's directory
    return run
