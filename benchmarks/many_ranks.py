"""A job of many ranks of one event each (issue 40, item 5): how ingest and every command grow with the
number of ranks when each rank is nearly empty (the per-file and per-rank costs alone).

    python benchmarks/many_ranks.py --ranks 10000 [--work DIR] [--keep] [--only ingest,summary,...]

Writes N traces rank<R>.json, each one GPU kernel of 1 us with its distributedInfo (rank R of N), ingests
them (`tracekit ingest DIR -o RUN`), then runs each command on the run as a process of its own and prints
its wall seconds and peak RSS (benchmarks/peak.py), and ingest's time per rank. The machines are shared
and noisy: read the figures as such (the load is printed with them).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent

COMMANDS = {
    "ingest": ["ingest", "{traces}", "-o", "{run}", "--no-progress"],
    "summary": ["report", "{run}", "summary", "--format", "csv"],
    "doctor": ["report", "{run}", "doctor", "--format", "csv"],
    "replay": ["report", "{run}", "replay", "--format", "csv"],
    "critical_path": ["report", "{run}", "critical_path", "--format", "csv"],
    "advise": ["advise", "{run}", "--format", "csv"],
    "html": ["html", "{run}", "-o", "{work}/page.html"],
    "timeline": ["timeline", "{run}", "-o", "{work}/t.json.gz"],
    "whatif --fix-rank": ["whatif", "{run}", "--fix-rank", "1", "--format", "csv"],
}


def write_traces(d: pathlib.Path, n: int) -> None:
    d.mkdir(parents=True, exist_ok=True)
    for r in range(n):
        doc = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": r, "world_size": n},
               "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1 + r % 7,
                                "dur": 1, "args": {"stream": 7}}]}
        (d / f"rank{r}.json").write_text(json.dumps(doc))


def measured(args: list[str]) -> tuple[float, float, int, str]:
    """(wall s, peak RSS MB of the process tree, exit status, stderr's last line) of `tracekit ARGS`."""
    with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
        start = time.perf_counter()
        p = subprocess.run([sys.executable, str(HERE / "peak.py"), tmp.name, "-m", "tracekit.cli.main", *args],
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        seconds = time.perf_counter() - start
        info = json.loads(pathlib.Path(tmp.name).read_text() or "{}")
    last = (p.stderr.strip().splitlines() or [""])[-1][:200]
    return seconds, info.get("tree_peak_rss_mb", float("nan")), p.returncode, last


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--work", default=None, help="where the traces and the run go [default: a temporary directory]")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--only", default=None, help="comma-separated commands (default: all; ingest when no run)")
    args = ap.parse_args(argv)
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="tk-ranks-"))
    traces, run = work / "traces", work / "run"
    only = args.only.split(",") if args.only else list(COMMANDS)
    try:
        if not traces.is_dir():
            write_traces(traces, args.ranks)
        print(f"{args.ranks} ranks of one event each, load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        for name in only:
            if name == "ingest":
                shutil.rmtree(run, ignore_errors=True)
            cmd = [a.format(traces=traces, run=run, work=work) for a in COMMANDS[name]]
            s, mb, rc, last = measured(cmd)
            per = f" ({s / args.ranks * 1000:.1f} ms a rank)" if name == "ingest" else ""
            print(f"  {name}: {s:.1f} s{per}, {mb:.0f} MB, exit {rc}" + (f": {last}" if rc else "")
                  + f" (load {os.getloadavg()[0]:.1f})", flush=True)
        return 0
    finally:
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
