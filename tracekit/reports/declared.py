"""A report declared by its .sql header alone (tracekit/sql/reports/NAME.sql; a file whose name starts with _
is a helper query, not a report). Besides the rule header (``-- NAME: what it computes``, ``-- @stage report``,
``-- @uses``, one ``-- @column`` line per output column), a report's header says:

    -- @summary one line for `tracekit report`'s list                                   (required)
    -- @param NAME = DEFAULT [A|B|C]: help      one per parameter; [choices] optional; the default's form
                                               gives the type (a whole number: int, else text)
    -- @first a, b, c                            the columns a reader needs first (kept in a narrow terminal)
    -- @left_out _helper                         a helper query of (status, instances) rows: a note under the
                                               table counts what the report left out
    -- @python package.module:function           the rows come from function(run, params) -> pyarrow.Table,
                                               not from the file's SQL (the header still documents them)

The limit rule: a parameter named ``limit`` is the runner's. The query returns every row in the order to show
them; the runner keeps the first ``limit`` (0: all) and says in a note how many it left out. The query must
not mention ``$limit`` (a ``LIMIT CASE ...`` would silently bind it to nothing); every other ``$name`` it
mentions must be a declared parameter. Breaking either rule is an error naming the file.
"""

from __future__ import annotations

import re

from .. import sql_files as _sql
from ..errors import TracekitError
from .base import Param, Report, dollars

TAGS = ("summary", "param", "first", "left_out", "python")
_PARAM = re.compile(r"^(\w+)\s*=\s*([^\s\[:]+)\s*(?:\[([^\]]*)\])?\s*:\s*(\S.*)$")
_PYTHON = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class ReportHeaderError(TracekitError):
    """A report's .sql header breaks a rule of tracekit/reports/declared.py."""


def _value(text: str):
    return int(text) if re.fullmatch(r"-?\d+", text) else text


def _param(where: str, text: str) -> Param:
    m = _PARAM.match(text)
    if not m:
        raise ReportHeaderError(f"{where}: '-- @param {text}': write it as '-- @param NAME = DEFAULT [A|B]: help' "
                                "(the [choices] are optional)")
    name, default, choices, help_ = m.groups()
    choices = tuple(c.strip() for c in choices.split("|")) if choices else None
    value = _value(default)
    if choices and value not in choices:
        raise ReportHeaderError(f"{where}: @param {name}: its default {default!r} is not among its choices "
                                f"{'|'.join(choices)}")
    if name == "limit" and not isinstance(value, int):
        raise ReportHeaderError(f"{where}: @param limit: its default must be a whole number (0: every row)")
    return Param(name, value, choices, help_.strip())


def report_of(f: _sql.SqlFile, helpers: set[str]) -> Report:
    """The Report that ``f``'s header declares; ``helpers``: the helper queries (files starting with _) a
    @left_out may name. A header that breaks a rule is a ReportHeaderError naming the file and the rule."""
    where = f"tracekit/sql/reports/{f.name}.sql"
    tags = {k for k, _ in f.tags}
    for k in sorted(tags - set(TAGS)):
        raise ReportHeaderError(f"{where}: unknown header tag @{k}; a report's header takes "
                                f"{', '.join('@' + t for t in TAGS)} (tracekit/reports/declared.py)")
    for k in ("summary", "first", "left_out", "python"):
        if len(f.tag(k)) > 1:
            raise ReportHeaderError(f"{where}: @{k} is given {len(f.tag(k))} times; give it once")
    summary = (f.tag("summary") or [""])[0]
    if not summary:
        raise ReportHeaderError(f"{where}: its header needs '-- @summary ONE LINE' (what `tracekit report` lists)")
    if not f.columns:
        raise ReportHeaderError(f"{where}: its header needs one '-- @column name: meaning, unit' line per column")
    params = tuple(_param(where, t) for t in f.tag("param"))
    names = [p.name for p in params]
    if len(set(names)) < len(names):
        raise ReportHeaderError(f"{where}: a @param is declared twice ({', '.join(names)})")
    columns = [c for c, _ in f.columns]
    first = tuple(c.strip() for c in (f.tag("first") or [""])[0].split(",") if c.strip())
    for c in first:
        if c not in columns:
            raise ReportHeaderError(f"{where}: @first {c}: not one of its @column names ({', '.join(columns)})")
    left_out = (f.tag("left_out") or [None])[0]
    if left_out is not None and left_out not in helpers:
        raise ReportHeaderError(f"{where}: @left_out {left_out}: no helper query tracekit/sql/reports/"
                                f"{left_out}.sql (a helper's name starts with _)")
    python = (f.tag("python") or [None])[0]
    if python is not None and not _PYTHON.match(python):
        raise ReportHeaderError(f"{where}: @python {python}: write it as package.module:function")
    if python is None:
        used = dollars(f.text)
        if "limit" in used:
            raise ReportHeaderError(f"{where}: the query mentions $limit; a report's limit is the runner's (it "
                                    "keeps the query's first `limit` rows): declare '-- @param limit = N: help' "
                                    "and return every row, in order")
        undeclared = sorted(used - set(names))
        if undeclared:
            raise ReportHeaderError(f"{where}: the query binds ${', $'.join(undeclared)}, which no @param declares")
    return Report(f.name, summary, params, left_out=left_out, first=first, python=python,
                  sql=f)


def scan(files: list[_sql.SqlFile]) -> dict[str, Report]:
    """The reports among ``files`` (the .sql files of tracekit/sql/reports), by name, in name order; the
    files starting with _ are helper queries."""
    helpers = {f.name for f in files if f.name.startswith("_")}
    return {f.name: report_of(f, helpers) for f in sorted(files, key=lambda f: f.name) if not f.name.startswith("_")}
