"""Hosts, clock offsets and link kinds (issue 22). The oracle of the synthetic tests is the generator's
stated parameters (benchmarks/synth_traces.py: each host's clock offset and drift, the ranks' arrival
times, the two link laws), never tracekit's own code; on the real DLRM job, the traces' own header."""

import json

import pytest

import tracekit
from benchmarks import synth_traces as synth
from tests.conftest import shared_traces
from tracekit.comms.bandwidth import busbw_factor
from tracekit.hosts import assign_hosts, host_in_trace

OFFSET_US, DRIFT_PPM, JITTER_US = 300.0, 5.0, 1.0
# recovered offsets: within 2 us. The jitter is up to 1 us on each end, so a single instance's difference
# between two hosts is off by at most 1 us; medians over dozens of instances are much closer, and the
# drift (5 ppm) fitted over the job's 0.1 s costs well under 1 us at its edges.
BOUND_US = 2.0


def test_host_from_the_trace_and_from_the_handlers_file_name():
    assert host_in_trace("/x/gpu-node-17_4242.1694128201545.pt.trace.json", {}) == (
        "gpu-node-17", "file name (tensorboard_trace_handler)")
    assert host_in_trace("/x/my_host_name_77.1694128201545.pt.trace.json.gz", {})[0] == "my_host_name"
    # a worker name that names a rank is not a host name (the DLRM job's worker0_step_12.<ts>.pt.trace.json)
    assert host_in_trace("/x/worker0_step_12.1694128201545.pt.trace.json", {}) == (None, None)
    assert host_in_trace("/x/rank3.json", {"tracekit_host": "n7"}) == ("n7", "tracekit.profiler")
    assert host_in_trace("/x/rank3.json", {"hostname": "n8"})[0] == "n8"


def test_hosts_option_and_the_assumption():
    def rows():
        return [{"rank": r, "path": f"/t/rank{r}.json", "host": None, "device_properties": json.dumps([{}] * 4)}
                for r in range(8)]
    t = rows()
    assign_hosts(t)  # 4 GPUs listed: ranks 0-3 on one host, 4-7 on another
    assert [x["host"] for x in t] == ["node0"] * 4 + ["node1"] * 4
    assert t[0]["host_source"].startswith("assumed: 4 GPUs per host")
    t = rows()
    assign_hosts(t, 2)
    assert [x["host"] for x in t] == ["node0", "node0", "node1", "node1", "node2", "node2", "node3", "node3"]
    t = rows()
    assign_hosts(t, {"rank5.json": "b", "0": "a"})
    assert (t[0]["host"], t[5]["host"], t[0]["host_source"]) == ("a", "b", "--hosts mapping")
    with pytest.raises(tracekit.TracekitError, match="neither a rank nor an input"):
        assign_hosts(rows(), {"99": "x"})


def _dlrm():
    return shared_traces() / "param_dlrm_kineto_8rank"


def _facts(run):
    return {name: sorted(map(str, run.sql(f"SELECT * EXCLUDE (instance_key) FROM {name}").to_pylist()))
            for name in ("collective_waits",)} | {
        "stragglers": sorted(map(str, run.sql("SELECT * FROM stragglers").to_pylist()))}


@pytest.mark.slow
def test_real_single_host_job_offsets_are_zero_and_nothing_changes(tmp_path):
    run = tracekit.ingest([_dlrm()], tmp_path / "run", jobs=2)
    # its header lists 8 V100s and the world is 8: one host (an assumption, said as one)
    hosts = run.sql("SELECT DISTINCT host, host_source FROM traces").to_pylist()
    assert hosts == [{"host": "node0", "host_source": "assumed: 8 GPUs per host (deviceProperties), consecutive ranks"}]
    off = run.sql("SELECT offset_ns, uncertainty_ns, status FROM clock_offsets").to_pylist()
    assert off == [{"offset_ns": 0, "uncertainty_ns": 0, "status": "single host"}]
    raw = tracekit.ingest([_dlrm()], tmp_path / "raw", jobs=2, align=False)
    assert _facts(run) == _facts(raw)
    assert {r["link_kind"] for r in run.sql("SELECT link_kind FROM collective_instances").to_pylist()} == {"intra-node"}
    assert "hosts assumed" in {r["check"] for r in tracekit.doctor(run).to_pylist()}


def test_real_ranks_as_hosts_of_their_own_share_one_clock(tmp_path):
    # pretend each rank is a host: the clocks are one, so the offsets found are the ends' own spread. The
    # trace's timestamps are whole microseconds and SOURCES.md measures matching kernels ending within
    # about 1 us of each other: each offset is within 1 us (resolution) + 2 us (ends on both sides).
    run = tracekit.ingest([_dlrm()], tmp_path / "run", jobs=2, hosts=1)
    rows = run.sql("SELECT * FROM clock_offsets ORDER BY host").to_pylist()
    assert len(rows) == 8 and {r["status"] for r in rows} == {"reference", "aligned"}
    assert all(abs(r["offset_ns"]) <= 3000 for r in rows), rows


@pytest.fixture(scope="module")
def skewed(tmp_path_factory):
    d = tmp_path_factory.mktemp("hosts")
    synth.main(["--ranks", "16", "--plan", "tp2-pp2-dp4", "--steps", "2", "--gpus-per-host", "2",
                "--clock-offset-us", str(OFFSET_US), "--clock-drift-ppm", str(DRIFT_PPM),
                "--end-jitter-us", str(JITTER_US), "--two-links", "--slow-rank", "5", "-o", str(d / "t")])
    truth = json.loads((d / "t" / synth.TRUTH).read_text())
    return (truth, tracekit.ingest([d / "t"], d / "aligned", jobs=2),
            tracekit.ingest([d / "t"], d / "raw", jobs=2, align=False))


@pytest.mark.slow
def test_offsets_recovered(skewed):
    truth, run, _ = skewed
    ref_us = truth["clock"]["ref_us"]
    rows = {r["host"]: r for r in run.sql("SELECT * FROM clock_offsets").to_pylist()}
    assert set(rows) == set(truth["hosts"])
    worst = 0.0
    for host, h in truth["hosts"].items():
        for t in (ref_us + 1e3, ref_us + 5e4, ref_us + 1e5):  # true times across the job, us
            read = t + h["offset_us"] + h["drift_ppm"] * 1e-6 * (t - ref_us)  # what the host's clock says
            r = rows[host]
            corrected = read + (r["offset_ns"] + r["drift_ppm"] * 1e-6 * (read * 1e3 - r["ref_ns"])) / 1e3
            worst = max(worst, abs(corrected - t))
    assert worst <= BOUND_US


def _true_arrival(truth, rank):
    return synth.SLOW_US if rank == truth["slow_rank"] else (rank * 7) % 5


def test_skew_and_last_rank_on_aligned_clocks_equal_the_truth(skewed):
    truth, run, raw = skewed
    q = "SELECT ranks, start_skew_ns, last_rank FROM collective_instances WHERE status = 'clean'"
    far = 0
    for name, r in (("aligned", run), ("raw", raw)):
        for row in r.sql(q).to_pylist():
            ranks = [int(x) for x in row["ranks"].split(",")]
            arr = {k: _true_arrival(truth, k) for k in ranks}
            off = abs(row["start_skew_ns"] / 1e3 - (max(arr.values()) - min(arr.values())))
            if name == "aligned":
                assert off <= BOUND_US, row
                if list(arr.values()).count(max(arr.values())) == 1:
                    assert row["last_rank"] == max(arr, key=arr.get), row
            else:
                far += off > 10 * BOUND_US
    assert far > 0  # raw clocks: the hosts' offsets, not the ranks, make the skew


def test_stragglers_on_aligned_clocks_name_the_slow_rank(skewed):
    truth, run, raw = skewed
    slow = truth["slow_rank"]
    got = {r["rank"]: r for r in run.sql("SELECT * FROM stragglers").to_pylist()}
    assert got[slow]["times_last"] == got[slow]["instances"] > 0
    got_raw = {r["rank"]: r for r in raw.sql("SELECT * FROM stragglers").to_pylist()}
    assert got_raw[slow]["times_last"] < got_raw[slow]["instances"]


def test_link_kinds_and_per_link_laws(skewed):
    truth, run, _ = skewed
    # tp2 groups sit on one host (2 GPUs per host); dp4 and pp2 groups span hosts, one rank per host
    rows = run.sql("SELECT DISTINCT pg_desc, link_kind FROM collectives").to_pylist()
    kinds = {(r["pg_desc"], r["link_kind"]) for r in rows}
    assert kinds == {("TP", "intra-node"), ("DP", "inter-node"), ("PP", "inter-node")}
    from tracekit.commands.whatif import fit
    for f in fit(run):
        law = truth["links"][f["link_kind"]]
        assert f["bus_gbps"] == pytest.approx(law["bus_gbps"], rel=0.05), f
        for nbytes in (f["min_bytes"], f["max_bytes"]):  # the law's time over the measured sizes
            factor = busbw_factor(f["collective"] if f["collective"] != "sendrecv" else "send",
                                  2 if f["kind"] == "PP" else {"TP": 2, "DP": 4}[f["kind"]])
            true_us = law["latency_us"] + nbytes * factor / (law["bus_gbps"] * 1e3)
            fitted_us = f["latency_us"] + nbytes * factor / (f["bus_gbps"] * 1e3)
            assert fitted_us == pytest.approx(true_us, rel=0.02), f


def test_identity_says_one_host_in_the_singular(tmp_path):
    """Four ranks, two per host: host1's clock is aligned to host0's, one host (it read '1 hosts aligned')."""
    synth.main(["--ranks", "4", "--plan", "dp4", "--steps", "2", "--gpus-per-host", "2", "--clock-offset-us", "300",
                "-o", str(tmp_path / "t")])
    rows = {r["item"]: r["value"] for r in tracekit.report(tracekit.ingest([tmp_path / "t"], tmp_path / "run", jobs=2),
                                                            "identity").to_pylist()}
    assert rows["hosts"] == "2 hosts: host0, host1"
    assert rows["clocks"].startswith("1 host aligned to the first host's clock (largest offset ")


def _on_two_clocks(d, ranks: int, from_rank: int):
    """``ranks`` ranks of 2 steps, one allreduce each; ranks from ``from_rank`` on timed on the epoch's clock
    (1.7e15 us: November 2023), the others from 0 (their process's start)."""
    from tests.conftest import dist, write_trace
    from tests.tracegen import kernel, step

    d.mkdir()
    for r in range(ranks):
        off = 1_700_000_000_000_000 if r >= from_rank else 0
        evs = []
        for s in range(2):
            t = off + s * 1000
            evs += [step(s + 1, t, 1000), *kernel("gemm", t + 10, 200), *kernel(
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL", t + 300 + 10 * r, 100, stream=20, **{
                    "Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float",
                    "Seq": s, "Process Group Name": "0", "Process Group Description": "default_pg",
                    "Group size": ranks, "Process Group Ranks": str(list(range(ranks)))})]
        write_trace(d / f"rank{r}.json", evs, header=dist(r, world=ranks))
    return d


@pytest.mark.parametrize("ranks, from_rank", [(2, 1), (6, 3)])
def test_ranks_on_two_clocks_are_refused_naming_the_files(tmp_path, capsys, ranks, from_rank):
    """Issue 40, items 7 and 11: ranks timed on different clocks (one from its process's start, one from the
    epoch, 53.9 years apart) made a run whose advise printed an 18-year step and whose stragglers a wait of
    5.1e12 ms (2 ranks), or stopped ingest with DuckDB's INT128-to-INT64 conversion error naming the hidden
    version folder (6 ranks). No wait or step across them can be measured: ingest refuses, naming a file
    of each clock, and leaves no run."""
    from tracekit.cli.main import main

    d = _on_two_clocks(tmp_path / "t", ranks, from_rank)
    assert main(["ingest", str(d), "-o", str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err
    assert err == (f"error: {d / f'rank{from_rank}.json'}: its collectives start 53.9 years after those of "
                   f"{d / 'rank0.json'}: the traces are timed on different clocks (one from its process's start, "
                   "one from the epoch?), and no wait or step across them can be measured; ingest the traces of "
                   "each clock on their own\n")
    assert not (tmp_path / "run").exists()
