"""Synthetic jobs with a planted problem whose size the generator's own parameters give (its stated
constants: SLOW_US, LATENCY_US, GBPS, and the counts the traces record): the analysis must find it."""

import pytest

import tracekit
from benchmarks import synth_traces as synth


def planted(tmp, name, *args):
    synth.main(["-o", str(tmp / name), *args])
    return tracekit.ingest([tmp / name], tmp / f"run-{name}", jobs=1)


def test_the_straggler_explanation_names_the_planted_slow_op(tmp_path):
    run = planted(tmp_path, "slow", "--ranks", "4", "--plan", "tp2-dp2", "--model", "example", "--steps", "2",
                  "--slow-rank", "3", "--slow-op", "DataLoader.fetch")
    rows = tracekit.report(run, "why_late").to_pylist()
    assert rows[0]["rank"] == 3  # the one that caused the most waiting
    top = next(r for r in rows if r["rank"] == 3 and r["kind"] != "lead-up")
    assert (top["kind"], top["name"]) == ("cpu op", "DataLoader.fetch")
    # the op runs SLOW_US - 6 us before every launch of the slow rank, never on the others
    assert top["others_ms"] == 0
    assert top["diff_ms"] * 1e3 == pytest.approx(top["instances"] * (synth.SLOW_US - 6))
