"""How long a counterfactual replay takes (tracekit whatif --fix-rank, advise's savings), and how it grows.

    python benchmarks/bench_counterfactual.py                  # the 8-rank DLRM run and synthetic jobs
    python benchmarks/bench_counterfactual.py --steps 2,8,32   # synthetic job sizes (steps of an 8-rank job)

Prints, least of --repeat: the split graph's build (SQL views and the split, once per run), one
counterfactual replay (a rank at the median's pace), and for synthetic jobs of growing size the replay's
time per graph node: the ratio of the largest job's to the smallest's (1.0: linear).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tracekit  # noqa: E402
from benchmarks import synth_traces as synth  # noqa: E402
from tracekit.graph import counterfactual as cf  # noqa: E402


def least(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def measure(run, repeat: int) -> tuple[int, float, float]:
    """(graph nodes, build seconds, one counterfactual replay's seconds)."""
    build = least(lambda: cf.split(run), repeat)
    sp = cf.split(run)
    late = [int(sp.ranks[0])]

    def one():
        dur, gap = cf.at_pace(sp, "idle", late)
        cf.job_step_ms(sp.replay(durations=dur, gaps=gap))
    return sp.graph.nodes, build, least(one, repeat)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--steps", default="2,8,32", help="synthetic 8-rank jobs of these many steps")
    args = ap.parse_args(argv)
    dlrm = ROOT.parent / "shared" / "traces" / "param_dlrm_kineto_8rank"
    with tempfile.TemporaryDirectory() as tmp:
        if dlrm.exists():
            n, build, replay = measure(tracekit.ingest([dlrm], pathlib.Path(tmp) / "dlrm", jobs=1), args.repeat)
            print(f"DLRM 8 ranks: {n:,} nodes; graph built in {build:.2f} s, a counterfactual replay in "
                  f"{replay * 1e3:.1f} ms")
        per_node = []
        for steps in (int(s) for s in args.steps.split(",")):
            out = pathlib.Path(tmp) / f"s{steps}"
            synth.main(["--ranks", "8", "--plan", "tp2-dp4", "--model", "example", "--steps", str(steps),
                        "-o", str(out)])
            n, build, replay = measure(tracekit.ingest([out], pathlib.Path(tmp) / f"run{steps}", jobs=1), args.repeat)
            per_node.append(replay / n)
            print(f"synthetic, {steps} steps: {n:,} nodes; built in {build:.2f} s, replayed in {replay * 1e3:.1f} ms "
                  f"({replay / n * 1e9:.0f} ns a node)")
        if len(per_node) > 1:
            print(f"replay time per node, largest job / smallest: {per_node[-1] / per_node[0]:.2f} (1.0: linear)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
