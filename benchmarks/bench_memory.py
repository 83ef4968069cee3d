"""Peak RSS and wall time of ingest, derive (`ingest --rederive`) and timeline on large generated runs,
each stage its own process measured by benchmarks/peak.py (the process and its workers). Target: under
1 GB each, whatever the size.

    python benchmarks/bench_memory.py [--case one_stream_1m|events_10m|events_43m ...] [--dir D] [--keep]

The inputs are written here by a small generator, not by the code under test: ranks of kernels launched
by cudaLaunchKernel calls inside ProfilerSteps. `one_stream_1m` is one rank with 1M kernels on one GPU
stream (derive ran out of memory there: issue 20 item 11); `events_10m` and `events_43m` spread that many
events over 8 ranks, each kernel on one of 4 streams (timeline's memory grew with the events: item 10).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CASES = {  # name: (ranks, kernels per rank, streams)
    "one_stream_1m": (1, 1_000_000, 1),
    "events_10m": (8, 10_000_000 // 16, 4),
    "events_43m": (8, 43_000_000 // 16, 4),
}


def write_rank(path: str, rank: int, world: int, kernels: int, streams: int, per_step: int = 10_000) -> None:
    """One Kineto-shaped trace: a launch (1 us) and its kernel (2 us) every 5 us, a ProfilerStep every
    ``per_step`` kernels; two events per kernel (plus one per step)."""
    with open(path, "w") as f:
        f.write(f'{{"schemaVersion": 1, "distributedInfo": {{"backend": "nccl", "rank": {rank}, "world_size": {world}}}'
                ',\n"traceEvents": [\n')
        sep = ""
        for k in range(kernels):
            ts = 5 * k
            if k % per_step == 0:
                f.write(f'{sep}{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{k // per_step}", '
                        f'"pid": 1, "tid": 1, "ts": {ts}, "dur": {5 * min(per_step, kernels - k)}}}')
                sep = ",\n"
            f.write(f'{sep}{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, '
                    f'"ts": {ts}, "dur": 1, "args": {{"correlation": {k + 1}}}}},\n'
                    f'{{"ph": "X", "cat": "kernel", "name": "gemm_{k % 7}", "pid": 0, "tid": {7 + k % streams}, '
                    f'"ts": {ts + 2}, "dur": 2, "args": {{"stream": {7 + k % streams}, "correlation": {k + 1}, '
                    '"device": 0}}')
            sep = ",\n"
        f.write("\n]}\n")


def generate(d: str, case: str) -> str:
    ranks, kernels, streams = CASES[case]
    traces = os.path.join(d, case)
    if not os.path.isdir(traces):
        os.makedirs(traces + ".part", exist_ok=True)
        for r in range(ranks):
            write_rank(os.path.join(traces + ".part", f"rank{r}.json"), r, ranks, kernels, streams)
        os.rename(traces + ".part", traces)
    return traces


def measure(name: str, args: list[str], d: str, env: dict) -> dict:
    out = os.path.join(d, f"{name}.json")
    r = subprocess.run([sys.executable, os.path.join(HERE, "peak.py"), out, "-m", "tracekit.cli.main", *args],
                       env=env, capture_output=True, text=True, check=False)
    with open(out) as f:
        res = json.load(f)
    res["ok"] = r.returncode == 0
    if r.returncode:
        res["error"] = (r.stderr.strip().splitlines() or [""])[-1][:200]
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", choices=sorted(CASES))
    ap.add_argument("--dir", help="where to generate and ingest (default: a temporary directory)")
    ap.add_argument("--keep", action="store_true", help="keep the generated traces and runs")
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="tk-bench-memory-")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    try:
        for case in a.case or ["one_stream_1m", "events_10m"]:
            traces = generate(d, case)
            run = os.path.join(d, case + ".run")
            rows = {
                "ingest": measure(f"{case}-ingest", ["ingest", traces, "-o", run, "--force", "--no-progress"], d, env),
                "derive": measure(f"{case}-derive", ["ingest", "--rederive", run], d, env),
                "timeline": measure(f"{case}-timeline", ["timeline", run, "-o", os.path.join(d, case + ".json.gz")],
                                    d, env),
            }
            for stage, r in rows.items():
                state = "ok" if r["ok"] else f"FAILED: {r['error']}"
                print(f"{case:14} {stage:9} peak RSS {r['tree_peak_rss_mb']:7.0f} MB  "
                      f"wall {r['seconds']:7.1f} s  {state}", flush=True)
    finally:
        if not a.keep and not a.dir:
            shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
