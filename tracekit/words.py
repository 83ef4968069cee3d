"""The words of a count in sentences tracekit prints: 1 collective, 2 collectives. The SQL reports use the
twin macros tk_word and tk_plural (tracekit/sql/words.sql), of the same rule."""

from __future__ import annotations


def word(n, one: str, many: str) -> str:
    """``one`` when ``n`` is 1, else ``many`` (a plural, or a phrase: 'rank has' / 'ranks have')."""
    return one if n == 1 else many


def plural(n, one: str, many: str) -> str:
    """``n`` with thousands separators, then its word: '1 rank', '2 ranks', '1,024 ranks have'."""
    return f"{n:,} {word(n, one, many)}"
