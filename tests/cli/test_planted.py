"""Synthetic jobs with a planted problem whose size the generator's own parameters give (its stated
constants: SLOW_US, LATENCY_US, GBPS, and the counts the traces record): the analysis must find it."""

import pathlib

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
    assert top["diff_ms"] * 1e3 == pytest.approx(top["late_instances"] * (synth.SLOW_US - 6))


def advice(run):
    from tracekit.commands.advise import advise
    return advise(run).to_pylist()


def per_step(run, collective, rank):
    (n,) = run.sql(f"SELECT count(*) / count(DISTINCT step) AS n FROM collectives WHERE rank = {rank} "
                   f"AND collective = '{collective}'").column("n").to_pylist()
    return n


QUIET = ["--slow-us", "0", "--jitter-us", "0"]  # no straggler: every rank arrives at once


def test_advise_finds_a_slow_rank_first(tmp_path):
    run = planted(tmp_path, "slow", "--ranks", "4", "--plan", "dp4", "--model", "example", "--compute", "none",
                  "--slow-rank", "3", "--slow-op", "DataLoader.fetch")
    top = advice(run)[0]
    assert top["finding"] == "straggler: rank 3 arrives last" and "DataLoader.fetch" in top["change"]
    # rank 0 arrives at once ((0 x 7) mod 5 = 0), rank 3 SLOW_US later, at every allreduce; nothing hides it
    expected_ms = synth.SLOW_US * per_step(run, "allreduce", 3) / 1e3
    assert top["saving_ms"] == pytest.approx(expected_ms, rel=0.10)


def test_advise_finds_small_buckets_first(tmp_path):
    run = planted(tmp_path, "buckets", "--ranks", "4", "--plan", "dp4", "--model", "example", "--compute", "none",
                  "--bucket-mb", "0.01", *QUIET)
    top = advice(run)[0]
    assert top["finding"] == "exposed communication: latency-bound" and "DP" in top["where"]
    # every allreduce pays the law's latency; the 539,648 bytes of gradients fit one 25 MiB bucket
    n = per_step(run, "allreduce", 0)
    assert n > 10
    assert top["saving_ms"] == pytest.approx((n - 1) * synth.LATENCY_US / 1e3, rel=0.10)


def test_advise_finds_comm_serialized_with_compute_first(tmp_path):
    run = planted(tmp_path, "serial", "--ranks", "4", "--plan", "dp4", "--model", "example", "--compute", "serial",
                  *QUIET)
    top = advice(run)[0]
    assert top["finding"] == "exposed communication: serialized with compute"
    # one allreduce of every fp32 gradient (134,912 parameters, worked out in test_whatif) per step, in a
    # group of 4: latency + bytes x 2 (n-1)/n / bandwidth, all of it exposed, compute beside it to hide it
    assert per_step(run, "allreduce", 0) == 1
    expected_us = synth.LATENCY_US + 134912 * 4 * 2 * 3 / 4 / (synth.GBPS * 1e3)
    assert top["saving_ms"] == pytest.approx(expected_us / 1e3, rel=0.10)


def test_advise_finds_a_pipeline_with_few_micro_batches_first(tmp_path):
    run = planted(tmp_path, "pipe", "--ranks", "2", "--plan", "pp2", "--model", "example", "--pipeline-us", "1000",
                  "--micro-batches", "2")
    top = advice(run)[0]
    assert top["finding"] == "pipeline bubble" and "2 -> 8" in top["change"]
    # the generator's schedule: a step is 2 (mb + pp - 1) slots of F + the send's transfer (+ 20 us). The same
    # work in 8 micro-batches: F / 4 each, sends of a quarter of the activation (4 x 32 x 64 fp32)
    act = 4 * 32 * 64 * 4
    def step_us(mb, f, a):
        return 2 * (mb + 2 - 1) * (f + synth.LATENCY_US + a / (synth.GBPS * 1e3)) + 20
    expected_ms = (step_us(2, 1000, act) - step_us(8, 250, act / 4)) / 1e3
    assert top["saving_ms"] == pytest.approx(expected_ms, rel=0.10)


def test_advise_on_the_real_dlrm_job_names_its_straggler_first():
    from tests.conftest import shared_traces

    run = tracekit.open(shared_traces() / "param_dlrm_kineto_8rank")
    # independent of advise: the rank last at most clean instances, and how late it starts its step
    (late,) = run.sql("SELECT last_rank FROM collective_instances WHERE status = 'clean' "
                      "GROUP BY last_rank ORDER BY count(*) DESC LIMIT 1").column("last_rank").to_pylist()
    (lag,) = run.sql(f"SELECT (max(ts_ns) FILTER (WHERE rank = {late}) - min(ts_ns)) / 1e6 AS ms FROM steps"
                     ).column("ms").to_pylist()
    top = advice(run)[0]
    assert top["finding"] == f"straggler: rank {late} arrives last"
    assert f"starts its steps {lag:,.3f} ms after the first rank" in top["change"]
    from tracekit.commands.advise import advise
    from tracekit.table_meta import note_of
    assert "no plan finding" in note_of(advise(run)) and "alltoall" in note_of(advise(run))  # the model's reach


def test_the_html_report_opens_with_the_advice(tmp_path):
    import re

    run = planted(tmp_path, "pipe", "--ranks", "2", "--plan", "pp2", "--model", "example", "--pipeline-us", "1000",
                  "--micro-batches", "2")
    page = pathlib.Path(tracekit.html(run, tmp_path / "report.html")).read_text()
    first = re.search(r"<h2>(.*?)</h2>(.*?)<h2>", page, re.DOTALL)
    assert first.group(1) == "What to change first (advise)" and "pipeline bubble" in first.group(2)


def test_advise_prints_the_sql_behind_a_finding(tmp_path, capsys):
    from tracekit import sql_files as tksql
    from tracekit.cli.main import main

    planted(tmp_path, "pipe", "--ranks", "2", "--plan", "pp2", "--model", "example", "--pipeline-us", "1000",
            "--micro-batches", "2")
    capsys.readouterr()
    assert main(["advise", str(tmp_path / "run-pipe"), "--sql", "1"]) == 0
    assert capsys.readouterr().out == ("-- sql/reports/_advise_pipeline.sql\n"
                                       + tksql.load("reports", "_advise_pipeline").text + "\n")
    assert main(["advise", str(tmp_path / "run-pipe"), "--sql", "9"]) == 1
    assert "there is no finding 9; advise found 1" in capsys.readouterr().err


def test_advise_in_a_terminal_prints_one_block_per_finding(tmp_path, capsys):
    from rich.console import Console

    from tracekit.cli.main import main
    from tracekit.commands.advise import advise
    from tracekit.render.findings import print_findings

    run = planted(tmp_path, "pipe", "--ranks", "2", "--plan", "pp2", "--model", "example", "--pipeline-us", "1000",
                  "--micro-batches", "2")
    table = advise(run)
    capsys.readouterr()
    print_findings(table, "advise", Console(width=80, force_terminal=False))
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80  # sentences wrap; no column is left out
    (row,) = table.to_pylist()
    flat = " ".join(out.split())
    # the heading names the rank and the finding; then one labelled line per field, each value whole
    assert "1. pipeline bubble saving " in flat
    # the change the generator's 2 micro-batches call for (as test_advise_finds_a_pipeline_... works out)
    assert "change " + " ".join(row["change"].split()) in flat and "2 -> 8" in row["change"]
    for label in ("where", "evidence", "confidence"):
        assert f"{label} {' '.join(row[label].split())}" in flat
    assert f"saving {row['saving_ms']:,.3f} ms per step ({row['saving_pct']:,.3f} % of the step)" in flat
    assert "sql sql/reports/_advise_pipeline.sql (--sql 1 prints it)" in flat
    # csv keeps the columns, one line per finding
    assert main(["advise", str(tmp_path / "run-pipe"), "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "priority,finding,where,evidence,saving_ms,saving_pct,change,confidence,sql"
    assert lines[1].startswith("1,pipeline bubble,")
    # --columns asks for a table, and gets one
    assert main(["advise", str(tmp_path / "run-pipe"), "--columns", "priority,finding"]) == 0
    assert "│ 1 │ pipeline bubble │" in " ".join(capsys.readouterr().out.split())


H100_NVLINK_GBPS = 450  # NVLink 4 on H100 SXM: 18 links x 25 GB/s each way (NVIDIA's datasheet), the generator's GPU


def _allreduces(trace_dir, rank=0):
    """The rank's allreduce kernels as the trace records them: (elements, bytes per element)."""
    import gzip
    import json
    doc = json.load(gzip.open(trace_dir / f"rank{rank}_trace.json.gz"))
    sizes = {"BFloat16": 2, "Float": 4}
    return [(e["args"]["In msg nelems"], sizes[e["args"]["dtype"]]) for e in doc["traceEvents"]
            if e.get("cat") == "kernel" and e["args"].get("Collective name") == "allreduce"]


def test_advise_finds_bandwidth_below_the_link_first(tmp_path):
    # one host of H100s, large buckets (not latency-bound), no compute to hide behind: what is left is the
    # generator's bus bandwidth, GBPS, against the 0.8 x 450 GB/s NVLink carries
    run = planted(tmp_path, "bw", "--ranks", "4", "--plan", "dp4", "--model", "gpt2-small", "--compute", "none",
                  *QUIET)
    top = advice(run)[0]
    assert top["finding"] == "exposed communication: bandwidth below the link"
    assert "(DP, intra-node)" in top["where"]
    kernels = _allreduces(tmp_path / "bw")
    steps = 2  # the generator's default --steps
    factor = 2 * (4 - 1) / 4  # nccl-tests' bus factor of an allreduce over 4 ranks
    times_us = [synth.LATENCY_US + n * b * factor / (synth.GBPS * 1e3) for n, b in kernels]
    busbw = sorted(n * b * factor / (t * 1e3) for (n, b), t in zip(kernels, times_us, strict=True))
    median = (busbw[(len(busbw) - 1) // 2] + busbw[len(busbw) // 2]) / 2
    expected_ms = sum(times_us) / steps / 1e3 * (1 - median / (0.8 * H100_NVLINK_GBPS))
    assert top["saving_ms"] == pytest.approx(expected_ms, rel=0.10)


def test_the_link_is_judged_per_link_kind(tmp_path):
    # 8 ranks, 2 per host, two laws: TP pairs (ranks 2k, 2k+1) share a host and move at the INTRA law
    # (150 GB/s: below 0.5 x 0.8 x NVLink); DP groups span 4 hosts at the INTER law (20 GB/s): the trace
    # does not say what the network carries, so nothing is compared with NVLink there
    run = planted(tmp_path, "links", "--ranks", "8", "--plan", "tp2-dp4", "--model", "gpt2-small", "--compute",
                  "none", "--gpus-per-host", "2", "--two-links", *QUIET)
    found = {f["where"].split(")")[0] + ")": f for f in advice(run) if f["where"].startswith("group ")}
    tp, dp = found["group TP (TP, intra-node)"], found["group DP (DP, inter-node)"]
    assert tp["finding"] == "exposed communication: bandwidth below the link"
    assert f"of about {0.8 * H100_NVLINK_GBPS:.0f} the link carries" in tp["change"]
    assert dp["finding"] == "exposed communication" and "bandwidth below" not in dp["change"]
    assert "across hosts" in dp["evidence"]


def test_one_collective_is_said_in_the_singular(tmp_path):
    """Two ranks, one step of 1 ms, one allreduce of 1,024 float32 (4 KiB) for 0.5 ms with nothing to hide
    behind: 0.5 ms exposed per step, one collective (it read '1 collectives of 4 KiB mean')."""
    import tracekit
    from tests.conftest import dist, write_trace
    from tests.tracegen import kernel, step

    for r in range(2):
        evs = [step(1, 0, 1000)] + kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 100, 500, launch=(50, 1),
                                          **{"Collective name": "allreduce", "In msg nelems": 1024,
                                             "Out msg nelems": 1024, "dtype": "Float", "Group size": 2})
        write_trace(tmp_path / f"rank{r}.json", evs, header=dist(r, world=2))
    (f,) = tracekit.advise(tracekit.ingest([tmp_path], tmp_path / "run", jobs=1)).to_pylist()
    assert f["evidence"].startswith("exposed 0.500 ms of 0.500 ms transfer per step; 1 collective of 4 KiB mean")


def test_the_most_delayed_of_tied_ranks_is_the_lowest(tmp_path):
    # 24 ranks run one allreduce; rank 23 starts it 1 ms after the others, which all wait 1 ms with nothing
    # else to run: a tie of 23 ranks, so the straggler finding names the lowest, rank 0 (it named rank 22)
    from tests.conftest import dist, write_trace
    from tests.tracegen import kernel, step
    (tmp_path / "traces").mkdir()
    for r in range(24):
        start = 3000 if r == 23 else 2000
        events = [step(1, 0, 20000)] + kernel(
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", start,
            4000 - (start - 2000), stream=20)
        write_trace(tmp_path / "traces" / f"rank{r}.json", events, header=dist(r, world=24))
    run = tracekit.ingest([tmp_path / "traces"], tmp_path / "run", jobs=1)
    rows = [f for f in advice(run) if f["finding"].startswith("straggler")]
    assert len(rows) == 1 and "rank 0 has 1.000 ms of it with nothing else to run" in rows[0]["evidence"]
