"""Every shipped example predicts its own plan's step within 15 % (issue 38): whatif of the run as it is,
against the step its traces measured, read here from the raw JSON (per profiled step the longest
ProfilerStep over the ranks, the job waiting for its slowest rank; the median over steps), not by tracekit.

Before issue 38: pp 0.70 (a point-to-point op's cost on a stage left out), moe and tp-compile 0.81 (one
profiled step: the law through the median instance left its tail out), planted-fsdp-* 0.81-0.83 (a rank's
wait inside FSDP's hooks counted in the compute the waiting share is taken of), planted-pp-* 0.74-0.80 (a
stage asleep or slowed spread over both stages). docs/model.md, "Every shipped example's own step".
"""

from __future__ import annotations

import gzip
import json
import pathlib
import statistics

import pytest

import tracekit
from tracekit.commands import whatif as w

TRACES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "traces"
EXAMPLES = sorted(p.name for p in TRACES.iterdir() if p.is_dir() and not p.name.startswith("sweep"))


def measured_step_ms(run_dir: pathlib.Path) -> float:
    per: dict[str, float] = {}
    for f in sorted(run_dir.rglob("*.json.gz")):
        with gzip.open(f) as fh:
            for e in json.load(fh)["traceEvents"]:
                if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"):
                    per[e["name"]] = max(per.get(e["name"], 0.0), e["dur"] / 1e3)
    return statistics.median(per.values())


def test_the_examples_are_all_here():
    assert {"ddp", "fsdp", "moe", "pp", "tp", "tp-compile"} <= set(EXAMPLES)
    assert len([n for n in EXAMPLES if n.startswith("planted-")]) >= 11


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLES)
def test_every_shipped_example_predicts_its_own_step_within_15_percent(tmp_path, name):
    run = tracekit.ingest([TRACES / name], tmp_path / name, jobs=1)
    row = w.whatif(run).to_pylist()[0]
    truth = measured_step_ms(TRACES / name)
    assert row["measured_step_ms"] == pytest.approx(truth, rel=1e-6)
    assert abs(row["step_ms"] / truth - 1) <= 0.15, (name, row["step_ms"], truth)
