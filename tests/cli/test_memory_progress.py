"""Peak memory does not grow with the trace; the progress bar shows only when asked or on a terminal."""

import json
import pathlib
import subprocess
import sys

import pytest

import tracekit
from tests.conftest import write_trace

ROOT = pathlib.Path(__file__).resolve().parents[2]


def big_trace(path, n):
    evs = [{"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 50}", "pid": 1, "tid": 2, "ts": 1000 + i * 0.5,
            "dur": 0.25, "args": {"External id": i, "Input Dims": [[i % 7, 3]], "Input type": ["float"]}}
           for i in range(n)]
    return write_trace(path, evs)


def peak_mb(trace, out, tmp):
    stats = tmp / f"{trace.stem}.peak.json"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "peak.py"), str(stats), "-m", "tracekit.cli.main",
                    "ingest", str(trace), "-o", str(out), "--jobs", "1", "--rank", f"{trace}=0"], check=True,
                   capture_output=True)
    return json.loads(stats.read_text())["peak_rss_mb"]


@pytest.mark.slow  # ingests several trace sizes to compare peak RSS: 31 s of the fast suite
def test_peak_rss_flat_in_trace_size(tmp_path):
    small = big_trace(tmp_path / "small.json", 150_000)  # ~30 MB of JSON: several 8 MB batches
    large = big_trace(tmp_path / "large.json", 600_000)  # ~125 MB of JSON, 4x
    assert large.stat().st_size > 3.5 * small.stat().st_size
    a = peak_mb(small, tmp_path / "r1", tmp_path)
    b = peak_mb(large, tmp_path / "r2", tmp_path)
    # once past the first batches memory is flat: four times the input costs (almost) nothing more
    assert b < a + 50, (a, b)


def test_progress_bar_on_request_and_silent_in_pipes(tmp_path):
    t = big_trace(tmp_path / "rank0.json", 1000)
    tracekit.ingest([t], tmp_path / "r", jobs=1, progress=True)  # forced on: draws and stops cleanly
    p = subprocess.run([sys.executable, "-m", "tracekit.cli.main", "ingest", str(t), "-o", str(tmp_path / "r2")],
                       capture_output=True, text=True)
    assert p.returncode == 0 and "\x1b[" not in p.stdout + p.stderr  # not a terminal: no escape codes
