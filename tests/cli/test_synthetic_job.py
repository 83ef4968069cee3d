"""A synthetic job (benchmarks/synth_traces.py) whose ground truth is known exactly: every rank's
collectives by type, role and bytes come from tracekit.analytic, one rank arrives late to everything,
and every transfer takes LATENCY + bytes x bus factor(n) / GBPS."""

import json

import pytest

import tracekit
from benchmarks import synth_traces as synth


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    d = tmp_path_factory.mktemp("job")
    synth.main(["--ranks", "8", "--plan", "tp2-pp2-dp2", "--steps", "2", "--slow-rank", "5", "-o", str(d / "traces")])
    truth = json.loads((d / "traces" / synth.TRUTH).read_text())
    return tracekit.ingest([d / "traces"], d / "run", jobs=2), truth


def test_collectives_per_rank_equal_the_truth(job):
    run, truth = job
    got = {}
    for r in run.sql("SELECT rank, collective, pg_desc, count(*) AS n, CAST(sum(bytes) AS BIGINT) AS b "
                     "FROM collectives GROUP BY ALL").to_pylist():
        got.setdefault(str(r["rank"]), []).append([r["collective"], r["pg_desc"], r["n"], r["b"]])
    assert {k: sorted(v) for k, v in got.items()} == truth["ranks"]


def test_every_instance_is_matched_clean_and_the_slow_rank_found(job):
    run, truth = job
    (s,) = run.sql("SELECT count(*) AS n, count(*) FILTER (WHERE status = 'clean') AS clean, "
                   "count(DISTINCT match_method) AS methods FROM collective_instances").to_pylist()
    assert s["n"] == s["clean"] and s["methods"] == 1
    top = run.sql("SELECT rank FROM stragglers ORDER BY caused_wait_ns DESC LIMIT 1").to_pylist()
    assert top == [{"rank": truth["slow_rank"]}]


def test_transfer_time_follows_the_bandwidth_law(job):
    run, truth = job
    law = truth["transfer"]
    rows = run.sql("SELECT collective, bytes, expected_ranks, transfer_ns FROM collective_instances").to_pylist()
    assert rows
    factor = {"allreduce": lambda n: 2 * (n - 1) / n, "sendrecv": lambda n: 1.0}
    for r in rows:
        expect_ns = (law["latency_us"] + r["bytes"] * factor[r["collective"]](r["expected_ranks"])
                     / (law["bus_gbps"] * 1e3)) * 1e3
        assert r["transfer_ns"] == pytest.approx(expect_ns, abs=2)
