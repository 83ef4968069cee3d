"""The SQL files, package data in tracekit/sql/ (a folder, not a package: `tracekit.sql` is the API's
function), one folder per stage of the rule graph (tracekit/rules.py):

    facts/*.sql     derived per rank at ingest and stored (facts/NAME in the run)
    reduce/*.sql    derived once per run at the end of ingest, across ranks, and stored
    finish/*.sql    derived per rank after the reduce (a rank's facts with the cross-rank ones), stored
    views/*.sql     computed on a connection when used (at open, or by a reduce rule)
    reports/*.sql   one query per report (tracekit/reports)
    macros.sql      the macros every connection has

Each rule file starts with a header: ``-- name: meaning`` lines, ``-- @stage fact|reduce|finish|view``, ``-- @uses
a, b`` (the rules and stored tables it reads), then one ``-- @column name: meaning`` line per output column
with its unit. ``tracekit schema`` prints these; a test fails if one is missing. A finish rule may say
``-- @scratch``: made a table during the finish for the rules after it (so that each is a query of its
own, within the memory budget), not stored; a run computes it as a view when a query names it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

_COL = re.compile(r"^--\s*@column\s+(\w+)\s*:\s*(.*)$")
_STAGE = re.compile(r"^--\s*@stage\s+(\w+)\s*$")
_USES = re.compile(r"^--\s*@uses\s+(.*)$")
_SCRATCH = re.compile(r"^--\s*@scratch\s*$")
_TAG = re.compile(r"^--\s*@(\w+)\s*(.*)$")  # any other tag (a report's @param, @first, ...), kept by name
_ROOT = resources.files("tracekit").joinpath("sql")
RULE_FOLDERS = ("facts", "reduce", "finish", "views")  # the folders of the rule graph, in stage order


@dataclass(frozen=True)
class SqlFile:
    name: str
    text: str
    doc: str
    columns: list[tuple[str, str]]
    stage: str | None = None
    uses: tuple[str, ...] = ()
    folder: str = ""
    scratch: bool = False  # a finish rule's table, made for the rules after it, not stored
    # the header's other ``-- @tag value`` lines, by tag, in order (a report's @summary, @param, @first, ...:
    # tracekit/reports/declared.py reads them)
    tags: tuple[tuple[str, str], ...] = ()

    def tag(self, name: str) -> list[str]:
        """The values of the header's ``-- @name`` lines, in order."""
        return [v for k, v in self.tags if k == name]


def parse(name: str, text: str, folder: str = "") -> SqlFile:
    """A SQL file's header: its doc, columns, stage and uses."""
    doc_lines, cols, stage, uses, scratch, tags = [], [], None, (), False, []
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        if m := _COL.match(line):
            cols.append((m.group(1), m.group(2).strip()))
        elif m := _STAGE.match(line):
            stage = m.group(1)
        elif m := _USES.match(line):
            uses = tuple(u.strip() for u in m.group(1).split(",") if u.strip())
        elif _SCRATCH.match(line):
            scratch = True
        elif m := _TAG.match(line):
            tags.append((m.group(1), m.group(2).strip()))
        else:
            doc_lines.append(line[2:].strip())
    return SqlFile(name, text, " ".join(d for d in doc_lines if d), cols, stage, uses, folder, scratch, tuple(tags))


def _dir(kind: str):
    return _ROOT.joinpath(kind) if kind else _ROOT


@functools.lru_cache(maxsize=None)
def load(kind: str, name: str) -> SqlFile:
    """The file ``kind/name.sql``; ``kind`` "views" finds a rule in whichever stage folder holds it (facts,
    reduce, finish or views), "" a file at the top (macros)."""
    kinds = RULE_FOLDERS if kind == "views" else (kind,)
    for k in kinds:
        f = _dir(k).joinpath(f"{name}.sql")
        if f.is_file():
            return parse(name, f.read_text(), k)
    raise FileNotFoundError(f"tracekit/sql/{kind}/{name}.sql")


def rule_files(folders=RULE_FOLDERS) -> list[SqlFile]:
    """Every rule of the graph (facts, reduce, finish, views), or of ``folders`` ("reports"), in folder then
    name order."""
    out = []
    for k in folders:
        for f in sorted(_dir(k).iterdir(), key=lambda p: p.name):
            if f.name.endswith(".sql"):
                out.append(load(k, f.name[:-4]))
    return out


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# read left to right, so that '--' inside a string is text and a quote inside a comment is comment
_LEXEME = re.compile(r"'((?:[^']|'')*)'|\"((?:[^\"]|\"\")*)\"|--[^\n]*|/\*.*?\*/", re.S)


def names_in(text: str, candidates, strings: bool = True) -> list[str]:
    """The candidate names (views, tables) a user's SQL text mentions outside comments (in a string or a
    "quoted" identifier too: defining a view too many costs nothing), in the candidates' order: which
    views to define before running a query (rules declare theirs: ``-- @uses``). ``strings=False``: not
    in a string (where a file's path, .../events/rank=0/..., names no view). In any case, as DuckDB
    matches names, quoted or not: EVENTS and "Events" name events."""
    words = {w.lower() for w in _WORD.findall(_LEXEME.sub(
        lambda m: f" {(m.group(1) if strings else None) or m.group(2) or ''} ", text))}
    return [c for c in candidates if c.lower() in words]
