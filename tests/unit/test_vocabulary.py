"""One name, one meaning: every public .sql file's @column lines (tables, views, reports) against the
vocabulary of docs/definitions.md ("Vocabulary: one name, one meaning")."""

from __future__ import annotations

import os
import re

import pytest

from tracekit import sql_files as tksql

DEFINITIONS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "definitions.md")


def vocabulary(text: str) -> dict[str, str]:
    """name -> meaning, from the markdown table under the '## Vocabulary' heading."""
    section = text.split("## Vocabulary", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)` \| (.+?) \|$", section, re.M)}


def _norm(s: str) -> str:
    return " ".join(s.lower().split())


def disagreements(files, vocab: dict[str, str]) -> list[str]:
    """What breaks the rule in ``files`` (SqlFile-like: name, folder, columns): a line of a vocabulary name
    that does not start with its meaning (then a word boundary), a name two files carry that the
    vocabulary lacks."""
    out, carriers = [], {}
    for f in files:
        for col, meaning in f.columns:
            carriers.setdefault(col, []).append(f"{f.folder}/{f.name}")
            if col in vocab:
                want, got = _norm(vocab[col]), _norm(meaning)
                if not (got.startswith(want) and (len(got) == len(want) or not got[len(want)].isalnum())):
                    out.append(f"{f.folder}/{f.name}.sql @column {col}: {meaning!r} does not start with "
                               f"{vocab[col]!r}")
    for col, where in sorted(carriers.items()):
        if len(where) > 1 and col not in vocab:
            out.append(f"{col}: carried by {', '.join(where)}, not in the vocabulary")
    return out


def public_files():
    return [f for f in tksql.rule_files(tksql.RULE_FOLDERS + ("reports",)) if not f.name.startswith("_")]


def test_every_name_has_one_meaning():
    with open(DEFINITIONS, encoding="utf-8") as fh:
        vocab = vocabulary(fh.read())
    assert len(vocab) > 50
    assert disagreements(public_files(), vocab) == []


def test_every_vocabulary_name_is_a_column():
    with open(DEFINITIONS, encoding="utf-8") as fh:
        vocab = vocabulary(fh.read())
    columns = {c for f in public_files() for c, _ in f.columns}
    assert sorted(set(vocab) - columns) == []


@pytest.mark.parametrize("lines, expected", [
    # the case: window_ms in one report is the span, in the other the step's whole window
    (["-- @column window_ms: the time the row covers on the rank's span, ms",
      "-- @column window_ms: the step's window on the rank, ms"],
     ["reports/b.sql @column window_ms: \"the step's window on the rank, ms\" does not start with"]),
    # a name two reports carry that the vocabulary does not define
    (["-- @column comm_ms2: union of comm, ms", "-- @column comm_ms2: exposed transfer, ms"],
     ["comm_ms2: carried by reports/a, reports/b, not in the vocabulary"]),
    # the meaning then a word boundary: 'ranks' is not 'rank' and more
    (["-- @column rank: global rank", "-- @column rank: global ranks, count"],
     ["reports/b.sql @column rank: 'global ranks, count' does not start with 'global rank'"]),
])
def test_two_meanings_are_found(lines, expected):
    files = [tksql.parse(n, f"-- {n}: x\n-- @stage report\n{line}\nSELECT 1", "reports")
             for n, line in zip("ab", lines, strict=True)]
    vocab = {"window_ms": "the time the row covers on the rank's span", "rank": "global rank"}
    got = disagreements(files, vocab)
    assert len(got) == len(expected) and all(g.startswith(e) for g, e in zip(got, expected, strict=True)), got
