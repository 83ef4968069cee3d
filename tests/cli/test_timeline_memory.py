"""`tracekit timeline` within bounded memory (issue 20 item 10): it sorted every event of the run at once with
no memory limit (43M events: 4.4 GB RSS). It now sorts rank by rank within TRACEKIT_DERIVE_MEMORY_MB, spilling
past it: four times the events cost (almost) no more memory."""

import gzip
import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAD = "x" * 300  # wide rows: each CPU op's name is ~310 bytes in DuckDB's sort


def cpu_trace(path, n):
    """One rank: a ProfilerStep holding ``n`` CPU ops on one thread, 1 µs apart (written by hand, gzipped)."""
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write('{"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1}, '
                '"traceEvents": [\n{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, '
                f'"tid": 1, "ts": 0, "dur": {n + 10}}}')
        for i in range(n):
            f.write(f',\n{{"ph": "X", "cat": "cpu_op", "name": "aten::op{i % 50}_{PAD}", "pid": 1, "tid": 2, '
                    f'"ts": {i + 1}, "dur": 0.5}}')
        f.write("\n]}\n")
    return path


def timeline_peak(tmp_path, n, env):
    trace = cpu_trace(tmp_path / f"r{n}.json.gz", n)
    run = tmp_path / f"run{n}"
    subprocess.run([sys.executable, "-m", "tracekit.cli.main", "ingest", str(trace), "-o", str(run), "--jobs", "1",
                    "--no-progress"], check=True, capture_output=True, env=env)
    stats, out = tmp_path / f"peak{n}.json", tmp_path / f"timeline{n}.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "peak.py"), str(stats), "-m", "tracekit.cli.main",
                        "timeline", str(run), "-o", str(out)], check=False, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    ops = 0
    with open(out) as f:  # every op of the trace is in the timeline, once (read a line at a time)
        for line in f:
            ops += '"name":"aten::op' in line.replace('": "', '":"')
    assert ops == n
    out.unlink()
    return json.loads(stats.read_text())["peak_rss_mb"]


@pytest.mark.slow
def test_timeline_memory_is_flat_in_the_number_of_events(tmp_path):
    import os
    env = {**os.environ, "TRACEKIT_DERIVE_MEMORY_MB": "64"}
    # 250k ops (~80 MB of rows to sort: past the 64 MB budget already), then 4x
    a = timeline_peak(tmp_path, 250_000, env)
    b = timeline_peak(tmp_path, 1_000_000, env)
    # sorting everything in memory, the 750k more rows (~240 MB) were that much more; bounded, nearly nothing
    assert b < a + 60, (a, b)
