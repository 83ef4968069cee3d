"""CPU seconds of each report on runs of different sizes, whole processes, interleaved: on a shared machine
the wall time measures the others; user + system CPU time of the process measures tracekit.

    python benchmarks/scale_cpu.py RUN_8 RUN_512 RUN_4096 [--repeat 5] [--pythonpath DIR]

Each command (every report, html, the timeline of one step for 8 and for 64 ranks, `select 1`) runs
--repeat times on each run, the runs and commands interleaved (a burst of load falls on all alike); prints
the median CPU seconds (user + system, from wait4's rusage), the largest peak RSS, and each run's median
against the first run's. Tracekit is imported from this checkout, or with --pythonpath from there (another version's).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # this checkout: tracekit's version unless --pythonpath
COMMANDS = {
    "select 1": ["sql", "{run}", "select 1", "--format", "csv"],
    **{name: ["report", "{run}", name, "--format", "csv"] for name in (
        "identity", "summary", "collectives", "overlap", "exposed", "skew", "stragglers", "why_late", "breakdown",
        "doctor")},
    # a per-rank report drawn for the terminal: above 64 ranks its spread and worst rows, or every row (--all)
    "summary table": ["report", "{run}", "summary"],
    "summary table --all": ["report", "{run}", "summary", "--all"],
    "html": ["html", "{run}", "-o", "{tmp}/page.html"],
    # the dependency graph's: advise replays it (up to graph/shared.py MAX_EVENTS events), replay always
    "advise": ["advise", "{run}", "--format", "csv"],
    "replay": ["report", "{run}", "replay", "--format", "csv"],
    "timeline 8 ranks": ["timeline", "{run}", "-o", "{tmp}/t8.json.gz", "--steps", "10", "--ranks", "0:7"],
    "timeline 64 ranks": ["timeline", "{run}", "-o", "{tmp}/t64.json.gz", "--steps", "10", "--ranks", "0:63"],
}


def cpu_of(args: list[str], env: dict, cwd: str) -> tuple[float, float]:
    """(user + system CPU seconds, peak RSS MB) of one tracekit process, started in ``cwd`` (python -m puts
    the working directory first on the path: a checkout there would be imported, not --pythonpath's)."""
    proc = subprocess.Popen([sys.executable, "-m", "tracekit.cli.main", *args], env=env, cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(args)} failed: {err.strip()}")
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--pythonpath", default=None)
    ap.add_argument("--only", default=None, help="comma-separated command names (default: all)")
    ap.add_argument("--json", default=None, help="write the figures here")
    a = ap.parse_args(argv)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.abspath(a.pythonpath) if a.pythonpath else str(ROOT)
    a.runs = [os.path.abspath(r) for r in a.runs]
    names = a.only.split(",") if a.only else list(COMMANDS)
    got: dict = {n: {r: [] for r in a.runs} for n in names}
    rss: dict = {n: {r: 0.0 for r in a.runs} for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.repeat):
            for n in names:
                for r in a.runs:
                    s, m = cpu_of([x.format(run=r, tmp=tmp) for x in COMMANDS[n]], env, tmp)
                    got[n][r].append(s)
                    rss[n][r] = max(rss[n][r], m)
    out = {}
    print(f"{'CPU s, median of ' + str(a.repeat):24s}" + "".join(f"{os.path.basename(r):>26s}" for r in a.runs))
    for n in names:
        med = {r: statistics.median(got[n][r]) for r in a.runs}
        base = med[a.runs[0]]
        print(f"{n:24s}" + "".join(f"{med[r]:8.2f} ({rss[n][r]:4.0f} MB) x{med[r] / base:4.2f}" for r in a.runs))
        out[n] = {r: {"cpu_s": med[r], "all": got[n][r], "peak_rss_mb": rss[n][r]} for r in a.runs}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
