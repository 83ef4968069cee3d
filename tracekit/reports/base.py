"""A report: a query (sql/reports/NAME.sql, or a Python function its header names) and the parameters it
binds, as its header declares them (tracekit/reports/declared.py); this runs one."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pyarrow as pa

from .. import sql_files as _sql
from ..errors import UsageError
from ..table_meta import FIRST_KEY, NOTE_KEY


def dollars(text: str) -> set[str]:
    """The ``$name`` parameters a query mentions outside its comments (a comment's ``$by`` is prose)."""
    return set(re.findall(r"\$([A-Za-z_]\w*)", re.sub(r"--[^\n]*|/\*.*?\*/", "", text, flags=re.S)))


@dataclass(frozen=True)
class Param:
    name: str
    default: object
    choices: tuple | None = None
    help: str = ""


@dataclass(frozen=True)
class Report:
    name: str
    summary: str
    params: tuple[Param, ...] = field(default=())
    # a reports/*.sql query of (status, instances) rows whose counts become a note under the table
    left_out: str | None = None
    # the columns a reader needs first: kept when the terminal is narrow, shown first in the HTML page
    first: tuple[str, ...] = ()
    # a report of one row per rank: the column whose largest values mark the rows that matter most
    most: str | None = None
    # "package.module:function": the rows come from function(run, params) -> pyarrow.Table, not the SQL
    python: str | None = None
    # the .sql file: its header, and its query unless ``python`` names a function
    sql: _sql.SqlFile | None = field(default=None, repr=False)

    def bind(self, **given) -> dict:
        known = {p.name: p for p in self.params}
        unknown = set(given) - set(known)
        if unknown:
            takes = f"it takes {', '.join(known)}" if known else "it takes none"
            raise UsageError(f"report {self.name!r} takes no parameter {', '.join(sorted(unknown))}; {takes}")
        values = {}
        for p in self.params:
            v = given.get(p.name)
            v = p.default if v is None else v
            if p.choices and v not in p.choices:
                raise UsageError(f"report {self.name!r}: {p.name} must be one of {', '.join(p.choices)}, not {v!r}")
            values[p.name] = v
        return values

    def run(self, run, **given) -> pa.Table:
        values = self.bind(**given)
        limit = values.get("limit")
        if "limit" in values and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
            raise UsageError(f"report {self.name!r}: limit must be a whole number ≥ 0 (0: every row), "
                             f"not {limit!r}")
        table = self.rows(run, values)
        shown = None
        if limit and table.num_rows > limit:  # the limit is the runner's: the query gave every row, in order
            shown = f"{limit:,} of {table.num_rows:,} rows shown; --limit 0 shows all"
            table = table.slice(0, limit)
        note = None
        if self.left_out and len(run.ranks) == 1:
            note = "this run has one rank: there is nothing to match across ranks"
        elif self.left_out:
            counts = run.sql(_sql.load("reports", self.left_out).text).to_pylist()
            if counts:
                note = "left out: " + ", ".join(f"{r['instances']:,} {r['status']}" for r in counts)
                note += " (collective_instances.status; docs/definitions.md)"
        if note is None and values.get("by") == "step" and not run.sql("SELECT 1 FROM steps LIMIT 1").num_rows:
            note = ("the traces hold no ProfilerStep, so every row is step -1 (outside steps): profile with "
                    "torch.profiler.schedule and call prof.step() once per training step")
        if note is None and table.num_rows == 0:
            note = why_empty(run, self.name, values)
        elif note is None and "step" in table.column_names and -1 in table["step"].to_pylist():
            note = outside_steps(run, by_time="timeline_ms" in table.column_names)
        if shown:
            note = shown + (f"; {note}" if note else "")
        meta = dict(table.schema.metadata or {})
        if note:
            meta[NOTE_KEY] = note.encode()
        if self.first:
            meta[FIRST_KEY] = ",".join(self.first).encode()
        return table.replace_schema_metadata(meta) if meta else table


    def rows(self, run, values: dict) -> pa.Table:
        """Every row of the report, in the order to show them (``limit`` aside: the caller cuts)."""
        if self.python:
            import importlib

            module, function = self.python.split(":")
            return getattr(importlib.import_module(module), function)(run, dict(values))
        text = self.sql.text
        used = {k: v for k, v in values.items() if k in dollars(text)}
        return run.sql(text, used or None)


def outside_steps(run, by_time: bool = False) -> str:
    """What the step -1 rows are, and on which ranks they hold kernels launched before the profile (a row of
    time, ``by_time``: breakdown's, places a kernel where it ran, so it holds them only if they ran there)."""
    if by_time:
        return "step -1: the time outside every ProfilerStep's window"
    note = "step -1: time and kernels outside every ProfilerStep's window"
    early = run.sql("SELECT rank, early_kernels FROM rank_checks WHERE early_kernels > 0 ORDER BY rank").to_pylist()
    if early:
        from ..words import plural
        n = sum(r["early_kernels"] for r in early)
        ranks = ",".join(str(r["rank"]) for r in early)
        note += (f"; on {plural(len(early), 'rank', 'ranks')} ({ranks}) it holds {plural(n, 'kernel', 'kernels')} "
                 "launched before the profiler started (doctor: kernels launched before the profile)")
    return note


def why_empty(run, name: str, values: dict) -> str:
    """Why a report has no rows, in words a user can act on."""
    def count(q: str) -> int:
        return run.sql(f"SELECT count(*) AS n FROM {q}").to_pylist()[0]["n"]

    if name in ("replay", "critical_path") and count("steps") == 0:  # rows per step: none without steps
        return ("no rows: the traces hold no ProfilerStep (profile with torch.profiler.schedule and call "
                "prof.step() once per training step)")
    if count("comm_intervals") == 0:
        return ("no rows: the traces hold no GPU kernel and no Gloo op (was CUDA activity recorded? "
                "torch.profiler's activities need ProfilerActivity.CUDA)")
    if count("collectives") == 0:
        return "no rows: the traces hold no communication (no NCCL/RCCL kernel, no Gloo collective)"
    return "no rows"



