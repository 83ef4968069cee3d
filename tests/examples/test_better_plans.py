"""advise proposes another plan only from a prediction that holds on the run itself (issue 32: on the
planted pipeline delay, where rank 1 sleeps 300 ms a step, the model of the run's own plan left the sleep
out, 244 ms against 341 measured, and a ZeRO-2 plan was proposed as saving 170 ms: the sleep's, which no
plan removes). Truth: examples/traces/planted.json (the planted sleep and the recordings' measured steps)."""

import json
import pathlib

import tracekit
from tracekit.commands.whatif_step import better_plans

TRACES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "traces"


def test_no_plan_is_proposed_where_the_model_misses_the_runs_own_step(tmp_path):
    truth = json.loads((TRACES / "planted.json").read_text())
    pp = truth["schemes"]["pp"]["delay"]
    assert pp["cost_ms"] > 0.5 * truth["planted_ms"]  # the sleep is most of the step the model cannot see
    run = tracekit.ingest([TRACES / pp["shipped"]["dir"]], tmp_path / "run", jobs=1)
    assert better_plans(run) == []
    from tracekit.commands.advise import advise

    assert not [r for r in advise(run).to_pylist() if r["finding"] == "another plan"]
