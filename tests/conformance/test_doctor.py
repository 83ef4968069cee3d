"""tracekit doctor on real and synthetic runs, against what the traces themselves show."""

import json
import os

import tracekit
from benchmarks import synth_traces as synth
from tests.conftest import shared_traces


def findings(run):
    return {r["check"]: r for r in tracekit.report(run, "doctor").to_pylist()}


def test_seven_of_eight_dlrm_ranks_names_the_missing_one(tmp_path):
    d = tmp_path / "seven"
    d.mkdir()
    files = sorted((shared_traces() / "param_dlrm_kineto_8rank").glob("*.json"))
    for f in files:
        if json.loads(f.read_text())["distributedInfo"]["rank"] != 5:
            os.symlink(f, d / f.name)
    got = findings(tracekit.ingest([d], tmp_path / "run", jobs=2))
    assert got["missing ranks"]["ranks"] == "5" and got["missing ranks"]["finding"].startswith("1 of 8 ranks")


def test_kernels_launched_before_the_profile_counted_from_the_raw_trace(tmp_path):
    """DLRM ranks 1 and 3 hold kernels with no launch event whose correlation ids are all below the
    rank's first recorded runtime call: launched before the profiler started, not dropped."""
    d = shared_traces() / "param_dlrm_kineto_8rank"
    early, missing, early_us = {}, 0, 0.0
    for f in sorted(d.glob("*.json")):
        doc = json.loads(f.read_text())
        launched = {e["args"]["correlation"] for e in doc["traceEvents"]
                    if e.get("ph") == "X" and e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset")
                    and "correlation" in e.get("args", {})}
        bare = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"
                and e.get("args", {}).get("correlation") not in launched]
        before = [e for e in bare if e["args"]["correlation"] < min(launched)]
        missing += len(bare) - len(before)
        if before:
            early[doc["distributedInfo"]["rank"]] = len(before)
            early_us += sum(e["dur"] for e in before)
    assert early and missing == 0
    run = tracekit.ingest([d], tmp_path / "run", jobs=2)
    got = findings(run)
    assert "kernels without launch" not in got
    f = got["kernels launched before the profile"]
    assert f["ranks"] == ",".join(map(str, sorted(early)))
    want = f"{sum(early.values())} GPU kernels ({round(early_us / 1e3, 1)} ms, 0.0 ms of it comm)"
    assert f["finding"].startswith(want)
    (n,) = run.sql("SELECT count(*) AS n FROM gpu_kernels WHERE launch_status = 'before window' AND step IS NULL "
                   "AND cat = 'kernel'").to_pylist()
    assert n["n"] == sum(early.values())


def test_a_clean_synthetic_job_has_no_finding(tmp_path):
    synth.main(["--ranks", "4", "--plan", "tp2-dp2", "--steps", "2", "-o", str(tmp_path / "t")])
    got = tracekit.report(tracekit.ingest([tmp_path / "t"], tmp_path / "run", jobs=2), "doctor").to_pylist()
    assert got == [{"check": "all", "severity": "ok", "ranks": "", "finding": "no finding", "fix": ""}]


def test_a_trace_without_sizes_or_steps(tmp_path):
    got = findings(tracekit.ingest([shared_traces() / "hta_df_index_resolver"], tmp_path / "run", jobs=1))
    assert got["no message sizes"]["finding"] == "2,020 of 2,020 collectives have no size (bytes and busbw NULL)"
    assert got["missing ranks"]["ranks"] == "0"  # rank 1 of a world of 2
