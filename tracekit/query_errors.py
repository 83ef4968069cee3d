"""A failed query's message in tracekit's words: a misspelled table suggests a tracekit table or view
(DuckDB's own guess ranges over its system catalog: pg_constraint, pragma_database_list)."""

from __future__ import annotations

import difflib
import re

_MISSING = re.compile(r'Catalog Error: Table with name (\S+) does not exist!')


def describe(message: str, names: list[str]) -> str:
    """``message`` (DuckDB's) with a missing table's suggestion drawn from ``names``, the run's tables
    and views; any other message unchanged."""
    m = _MISSING.search(message)
    if not m:
        return one_line(message)
    wrong = m.group(1).strip('"')
    close = close_names(wrong, names)
    hint = (f"did you mean {' or '.join(close[:3])}?" if close
            else f"the tables and views are: {', '.join(names)}")
    return f"no table or view named {wrong}; {hint} (`tracekit schema RUN` lists every column)"


def close_names(wrong: str, names) -> list[str]:
    """The names of ``names`` that ``wrong`` was probably meant to be (a part of one, or a near spelling:
    'stragglrs', 'critical-path'), best first, at most three."""
    low = wrong.lower()
    close = [n for n in names if low in n or n in low] or difflib.get_close_matches(low, list(names), n=2, cutoff=0.6)
    return close[:3]


def one_line(message: str) -> str:
    """DuckDB's message on one line: its "LINE 1: ..." quote of the query kept, the caret line dropped."""
    parts = [x.strip() for x in message.splitlines()]
    return " ".join(x for x in parts if x and set(x) - {"^", " "})
