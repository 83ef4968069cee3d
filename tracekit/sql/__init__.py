"""SQL shipped as package data: views/*.sql (public views) and reports/*.sql (one per report).

Each file starts with a header: ``-- name: meaning`` lines, then one ``-- @column name: meaning`` line
per output column with its unit. ``tracekit schema`` prints these; a test fails if one is missing.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

_COL = re.compile(r"^--\s*@column\s+(\w+)\s*:\s*(.*)$")


@dataclass(frozen=True)
class SqlFile:
    name: str
    text: str
    doc: str
    columns: list[tuple[str, str]]


@functools.lru_cache(maxsize=None)
def load(kind: str, name: str) -> SqlFile:
    text = resources.files(__package__).joinpath(kind, f"{name}.sql").read_text()
    doc_lines, cols = [], []
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        m = _COL.match(line)
        if m:
            cols.append((m.group(1), m.group(2).strip()))
        else:
            doc_lines.append(line[2:].strip())
    return SqlFile(name, text, " ".join(d for d in doc_lines if d), cols)


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_COMMENT = re.compile(r"--[^\n]*")


def names_in(text: str, candidates) -> list[str]:
    """The candidate names (views, tables) a SQL text uses, comments aside, in the candidates' order."""
    words = set(_WORD.findall(_COMMENT.sub("", text)))
    return [c for c in candidates if c in words]
