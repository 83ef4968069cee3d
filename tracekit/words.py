"""The words of a count in sentences tracekit prints: 1 collective, 2 collectives. The SQL reports use the
twin macros tk_word and tk_plural (tracekit/sql/words.sql), of the same rule."""

from __future__ import annotations


def word(n, one: str, many: str) -> str:
    """``one`` when ``n`` is 1, else ``many`` (a plural, or a phrase: 'rank has' / 'ranks have')."""
    return one if n == 1 else many


def plural(n, one: str, many: str) -> str:
    """``n`` with thousands separators, then its word: '1 rank', '2 ranks', '1,024 ranks have'."""
    return f"{n:,} {word(n, one, many)}"


def ranges(numbers) -> str:
    """Whole numbers written with ranges of three or more, sorted: [0, 1, 2, 3, 5, 7, 8] -> '0-3, 5, 7, 8'."""
    ns = sorted(set(int(n) for n in numbers))
    out, lo = [], None
    for i, n in enumerate(ns):
        lo = n if lo is None else lo
        if i + 1 == len(ns) or ns[i + 1] != n + 1:
            out.append(str(lo) if lo == n else f"{lo}, {n}" if n == lo + 1 else f"{lo}-{n}")
            lo = None
    return ", ".join(out)


def ranks_named(ranks) -> str:
    """'rank 3' or 'ranks 0, 1' / 'ranks 0-7': the word before a list of ranks already written as text
    (``ranges``), singular where it names one rank."""
    text = str(ranks).strip()
    return f"rank {text}" if text.isdigit() else f"ranks {text}"
