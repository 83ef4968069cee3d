"""The words before a list of ranks: singular for one rank (advise wrote 'ranks 0')."""

import pytest

from tracekit.words import ranks_named


@pytest.mark.parametrize("given, said", [("0", "rank 0"), (7, "rank 7"), ("0, 1", "ranks 0, 1"),
                                         ("0-7", "ranks 0-7"), ("0-3, 5", "ranks 0-3, 5")])
def test_one_rank_is_singular(given, said):
    assert ranks_named(given) == said
