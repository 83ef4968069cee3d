"""The words before a list of ranks: singular for one rank (advise wrote 'ranks 0')."""

import pytest

from tracekit.words import ranks_named


@pytest.mark.parametrize("given, said", [("0", "rank 0"), (7, "rank 7"), ("0, 1", "ranks 0, 1"),
                                         ("0-7", "ranks 0-7"), ("0-3, 5", "ranks 0-3, 5")])
def test_one_rank_is_singular(given, said):
    assert ranks_named(given) == said


def test_a_bound_that_saves_nothing_names_the_ranks_that_set_the_pace():
    """advise's bound finding, when freeing its ranks' host saves nothing (another rank's GPU sets the job's
    pace): it said 'ends 0.000 ms sooner: an upper bound of what a faster host saves'."""
    from tracekit.commands.advise_replay import _paced_by

    per = {0: {"bound": "host"}, 1: {"bound": "host"}, 2: {"bound": "GPU"}, 3: {"bound": "host"}}
    assert _paced_by(per, [0, 1, 3]) == "no sooner: rank 2 (bound: GPU) sets its pace (its finding below)"
    per[1]["bound"] = "host idle"
    assert _paced_by(per, [0, 3]) == ("no sooner: ranks 1, 2 (bound: GPU: 2; host idle: 1) set its pace (their "
                                      "findings below)")
