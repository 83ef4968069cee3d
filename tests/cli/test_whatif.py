"""tracekit whatif: on synthetic jobs whose network law is known (latency 5 us + bus traffic / 100 GB/s)
the fit recovers it and the prediction for another plan matches a job generated with that plan; on the
shipped example runs, predicting their own plan reproduces their measured communication time."""

import json
import pathlib

import pytest

import tracekit
from benchmarks import synth_traces as synth
from tracekit.model import Plan
from tracekit.whatif import fit, whatif

ROOT = pathlib.Path(__file__).resolve().parents[2]

MEASURED = """
SELECT c.pg_desc AS grp, CASE WHEN c.collective IN ('send', 'recv') THEN c.collective ELSE i.collective END AS coll,
       CAST(sum(i.transfer_ns) AS DOUBLE) AS t
FROM collective_waits w JOIN collective_instances i USING (instance_key)
JOIN _collectives c ON c.rank = w.rank AND c.event_index = w.event_index
WHERE i.status = 'clean' AND NOT c.tracekit_marker GROUP BY ALL
"""


def job(tmp, plan, steps=2):
    synth.main(["--ranks", "8", "--plan", plan, "--steps", str(steps), "-o", str(tmp / plan)])
    return tracekit.ingest([tmp / plan], tmp / f"run-{plan}", jobs=2)


def measured_ms(run, world, steps, group_of=lambda g: g):
    """Per (group, collective): each rank's share of instance transfer time, per rank and step, ms."""
    return {(group_of(r["grp"]), r["coll"]): r["t"] / world / steps / 1e6 for r in run.sql(MEASURED).to_pylist()}


def test_the_fit_recovers_the_law(tmp_path):
    laws = {(f["collective"], f["kind"]): f for f in fit(job(tmp_path, "tp2-pp2-dp2"))}
    dp = laws[("allreduce", "DP")]  # several message sizes: latency and bandwidth apart
    assert dp["latency_us"] == pytest.approx(synth.LATENCY_US, abs=0.2)
    assert dp["bus_gbps"] == pytest.approx(synth.GBPS, rel=0.01)


@pytest.mark.parametrize("other", ["tp4-dp2", "tp2-dp4"])
def test_prediction_for_another_plan_matches_a_job_run_with_it(tmp_path, other):
    a = job(tmp_path, "tp2-pp2-dp2")
    b = job(tmp_path, other)
    plan = synth.parse_plan(other)
    pred = {(r["group"], r["collective"]): r for r in whatif(a, plan).to_pylist()}
    meas = measured_ms(b, 8, 2)
    for key, t in meas.items():
        assert pred[key]["time_ms"] == pytest.approx(t, rel=0.05), key  # both per rank and step


@pytest.mark.parametrize("scheme", ["ddp", "fsdp", "tp", "pp"])
def test_an_example_run_predicting_its_own_plan(scheme):
    run = tracekit.open(ROOT / "examples" / "traces" / scheme)
    cfg = json.loads(run.sql("SELECT metadata FROM traces LIMIT 1").to_pylist()[0]["metadata"])["tracekit_config"]
    p = cfg["plan"]
    plan = Plan(dp=p["dp"], tp=p["tp"], pp=p["pp"], zero=p["zero"], backend="gloo")
    roles = {str(v): k for k, v in p["groups"].items()}
    steps = cfg["steps"]
    pred = {(r["group"], r["collective"]): r["time_ms"] for r in whatif(run, plan).to_pylist()}
    (role,) = set(p["groups"])  # the examples run one group each
    meas = measured_ms(run, plan.world, steps, group_of=lambda g: role)
    assert meas
    for key, t in meas.items():
        assert pred[key] / 1 == pytest.approx(t, rel=0.10), (key, roles)


def test_cli_prints_the_laws_and_draws_them(tmp_path, capsys):
    from tracekit.cli.main import main
    job(tmp_path, "tp2-pp2-dp2")
    capsys.readouterr()  # the generator's own output
    assert main(["whatif", str(tmp_path / "run-tp2-pp2-dp2"), "--fit", "--format", "json",
                 "--plot", str(tmp_path / "fit.png")]) == 0
    laws = {(f["collective"], f["kind"]) for f in json.loads(capsys.readouterr().out)}
    assert laws == {("allreduce", "DP"), ("allreduce", "TP"), ("sendrecv", "PP")}
    assert (tmp_path / "fit.png").read_bytes()[:4] == b"\x89PNG"
