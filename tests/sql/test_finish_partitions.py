"""The finish rules (tracekit/sql/finish: step_breakdown, why_late's lead-ups) are derived after the reduce
a partition of ranks at a time, each partition seeing its own ranks' rows only. With one rank a partition
the reports must still give the hand-worked and planted figures of tests/sql/test_breakdown.py and
tests/cli/test_planted.py (their expected values come from the events' times and the generator's
constants, not from tracekit)."""

import os

import tests.cli.test_planted as planted
import tests.sql.test_breakdown as hand
import tracekit.derive


def one_rank_a_partition(monkeypatch):
    monkeypatch.setattr(tracekit.derive, "FINISH_RANKS", 1)


def finish_files(run, name):
    d = os.path.join(os.fspath(run), "facts", name)
    return sorted(f for f in os.listdir(d) if f.endswith(".parquet"))


def test_the_hand_worked_breakdown_with_one_rank_a_partition(tmp_path, monkeypatch):
    one_rank_a_partition(monkeypatch)
    hand.test_a_hand_worked_timeline(tmp_path)
    assert finish_files(tmp_path / "run", "step_breakdown") == ["ranks-0000000-0000000.parquet",
                                                                "ranks-0000001-0000001.parquet"]


def test_the_planted_slow_op_with_one_rank_a_partition(tmp_path, monkeypatch):
    one_rank_a_partition(monkeypatch)
    planted.test_the_straggler_explanation_names_the_planted_slow_op(tmp_path)
    assert len(finish_files(tmp_path / "run-slow", "_lead_up_parts")) == 4
