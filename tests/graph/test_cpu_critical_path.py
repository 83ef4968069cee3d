"""The critical path of a CPU (Gloo) run follows a wait to the rank that arrived last (issue 31: on the
planted ddp delay, the path sat on the waiting rank 0's 'CPU between ops'). Truth: the recording's plant,
examples/traces/planted.json (rank 1 sleeps planted_ms before each backward)."""

import json
import pathlib

import tracekit

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRACES = ROOT / "examples" / "traces"


def test_the_planted_sleep_is_on_the_critical_path_of_every_step(tmp_path):
    truth = json.loads((TRACES / "planted.json").read_text())
    rank, sleep_ms = truth["planted_rank"], truth["planted_ms"]
    run = tracekit.ingest([TRACES / truth["schemes"]["ddp"]["delay"]["shipped"]["dir"]], tmp_path / "run", jobs=1)
    rows = tracekit.report(run, "critical_path").to_pylist()
    steps = sorted({r["step"] for r in rows})
    assert len(steps) >= 4
    for s in steps:
        idle = sum(r["ms"] for r in rows if r["step"] == s and r["rank"] == rank and r["cause"] == "host idle")
        assert 0.95 * sleep_ms <= idle <= 1.1 * sleep_ms, (s, idle)
        # what rank 0 adds is its own work and the all-reduce's transfer, not a wait for rank 1
        assert not any(r["step"] == s and r["rank"] != rank and r["cause"] == "host idle" and r["ms"] > 10
                       for r in rows)
