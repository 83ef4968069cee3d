"""advise proposes another plan only from a prediction that holds on the run itself (issue 32: on the
planted pipeline delay, where rank 1 sleeps 300 ms a step, the model of the run's own plan left the sleep
out, 244 ms against 341 measured, and a ZeRO-2 plan was proposed as saving 170 ms: the sleep's, which no
plan removes). Since issue 38 the simulated pipeline keeps each stage's measured excess and predicts that run's
own step (344 ms): a pipelined run proposes nothing where a stage's compute is not what its work gives (the
sleeping stage: 1.8x). Truth: examples/traces/planted.json (the planted sleep and the recordings' measured steps)."""

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


def test_waiting_inside_fsdps_hooks_is_not_fsdps_work(tmp_path):
    """On the planted FSDP runs rank 1 works (or sleeps) 300 ms before each backward, and rank 0 waits for it
    inside FSDP's pre-backward hook, which reads as compute: taken as FSDP's own work, DDP was proposed as
    saving 210 ms (a reviewer), where the same plant under DDP measures 75 ms less (planted.json's medians).
    A DDP proposal, if any, saves within 25 % of that measured difference; no other plan is proposed."""
    from tracekit.commands.advise import advise

    truth = json.loads((TRACES / "planted.json").read_text())["schemes"]
    for kind in ("slow", "delay"):
        fsdp = truth["fsdp"][kind]
        run = tracekit.ingest([TRACES / fsdp["shipped"]["dir"]], tmp_path / kind, jobs=1)
        measured = fsdp["median_ms"] - truth["ddp"][kind]["median_ms"]
        for r in [r for r in advise(run).to_pylist() if r["finding"] == "another plan"]:
            assert r["where"].startswith("dp 2 x tp 1 x pp 1, zero 0"), r
            assert abs(r["saving_ms"] / measured - 1) <= 0.25, (kind, r["saving_ms"], measured)


def test_a_calibrated_interval_proposes_what_the_sweep_measured_faster(tmp_path):
    """From the sweep's tensor- and sequence-parallel recording, tp without sequence parallelism is predicted
    at 125 ms against 163 measured: its interval was 88-194 ms (the parts' ends added, across a change of
    the sharded ops), so nothing was proposed; calibrated (80 % of such intervals hold the measured step)
    it lies below, and tp is proposed. measured.csv: tp 128.0 ms, tp-sp 162.8 (the least median of three
    recordings each): the saving within 25 % of the measured 34.8 ms."""
    import csv

    sweep = TRACES / "sweep"
    meas = {r["plan"]: float(r["step_ms"]) for r in csv.DictReader(open(sweep / "measured.csv"))}
    run = tracekit.ingest([sweep / "tp-sp"], tmp_path / "tp-sp", jobs=1)
    rows = better_plans(run, cores=2)
    assert [r["plan"] for r in rows] == ["dp 1 x tp 2 x pp 1, zero 0"]
    assert abs(rows[0]["saving_ms"] / (meas["tp-sp"] - meas["tp"]) - 1) <= 0.25


def test_the_sweep_marks_plans_it_cannot_tell_from_the_best(capsys):
    """Issue 38: --sweep ranks by the point estimate; a plan whose interval overlaps the best one's is
    marked "not separable from the best" (the rows' own intervals say which), and better_plans, which
    advise proposes from, keeps none of those after its best."""
    import json

    from tracekit.cli.main import main

    assert main(["whatif", str(TRACES / "sweep" / "tp2-dp2"), "--sweep", "--cores", "2", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    best = rows[0]
    assert best["versus_best"] == "best"
    marks = {r["versus_best"] for r in rows[1:]}
    assert marks == {"not separable from the best", None}
    for r in rows[1:]:
        assert (r["versus_best"] is None) == (r["step_ms_lo"] > best["step_ms_hi"]), r


def test_the_plan_finding_names_the_runs_own_plan_and_why_the_sweeps_faster_ones_are_not_proposed(tmp_path):
    """The tp-sp recording (record.py: tp 2 with sequence parallelism, micro-batches of 8) proposes tp without
    it (measured.csv: 128.0 against 162.8 ms). It named the proposed plan alone, dp 1 x tp 2 x pp 1, zero 0,
    which reads as the run's own; and the sweep ranks plans at dp 2 above it, which split the run's 8
    sequences a step into micro-batches of 4, a size the run never measured: the finding says so."""
    from tracekit.commands.advise import advise

    run = tracekit.ingest([TRACES / "sweep" / "tp-sp"], tmp_path / "run", jobs=1)
    (plan,) = [r for r in advise(run).to_pylist() if r["finding"] == "another plan"]
    assert plan["where"] == ("dp 1 x tp 2 x pp 1, zero 0 instead of the run's own dp 1 x tp 2 x pp 1, zero 0, "
                             "sequence parallel"), plan
    assert "not proposed" in plan["evidence"] and "dp 2 x tp 1 x pp 1, zero 0 at micro-batch 4" in plan["evidence"], \
        plan["evidence"]
