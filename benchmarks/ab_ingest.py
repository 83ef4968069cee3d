"""Ingest of one trace by two trees of tracekit, interleaved, whole processes: is this round's ingest slower?

    git worktree add /tmp/tk-old <commit> && (cd /tmp/tk-old && python setup.py build_ext --inplace -q)
    python benchmarks/ab_ingest.py /tmp/tk-old . TRACE [--rounds 4]

Each round runs `tracekit ingest TRACE --jobs 2` with the old tree's code, then the new one's (PYTHONPATH),
from a scratch directory; prints each wall time and the medians. A shared machine drifts within minutes:
read the two columns side by side, not against another day's figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("trace")
    ap.add_argument("--rounds", type=int, default=4)
    a = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="tk-ab-")
    times: dict[str, list[float]] = {"old": [], "new": []}
    try:
        for _ in range(a.rounds):
            for side, tree in (("old", a.old), ("new", a.new)):
                out = os.path.join(work, side)
                shutil.rmtree(out, ignore_errors=True)
                env = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-m", "tracekit.cli.main", "ingest", os.path.abspath(a.trace), "-o",
                                out, "--jobs", "2", "--no-progress"], cwd=work, env=env, check=True,
                               stdout=subprocess.DEVNULL)
                times[side].append(time.perf_counter() - t0)
                print(f"{side} {times[side][-1]:.2f} s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"median: old {statistics.median(times['old']):.2f} s, new {statistics.median(times['new']):.2f} s")


if __name__ == "__main__":
    main()
