"""The handler's stall: how much a rank part beside training (tracekit.profiler.trace_handler(DIR, run=RUN))
slows the steps after the profiled ones.

    python benchmarks/bench_stall.py [--runs 10] [--after 200] [--parallel ddp]

Runs examples/gpt/train.py on 2 Gloo ranks (torchrun, OMP_NUM_THREADS=1) without and with --run-dir, in
turn (off, on, off, on, ...: the machine's load drifts, so the pairs share it), each training --after
steps past the profile; train.py prints their mean and median step. The last lines give, for each side,
the median of the runs' median steps and of their mean steps, and the ratio with/without. On a shared
machine the runs without the handler alone spread widely (7.2 to 10.7 ms here): read the ratio beside
that spread, which is printed too, and beside the pairs' own ratios (each run with the handler over the
run without it just before it), their median and quartiles.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
LINE = re.compile(r"steps after the profile: mean ([0-9.]+) ms, median ([0-9.]+) ms")


def one_run(work: pathlib.Path, parallel: str, after: int, with_handler: bool) -> tuple[float, float]:
    """(mean, median) step in ms of one training run."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
           str(ROOT / "examples" / "gpt" / "train.py"), "--parallel", parallel, "--after", str(after),
           "--trace-dir", str(work / "traces")]
    if with_handler:
        cmd += ["--run-dir", str(work / "run")]
    path = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=path)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    m = LINE.search(p.stdout)
    if p.returncode or not m:
        raise SystemExit(f"train.py failed ({p.returncode}): {(p.stderr or p.stdout).strip()[-800:]}")
    return float(m.group(1)), float(m.group(2))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10, help="runs of each side, interleaved [default: 10]")
    ap.add_argument("--after", type=int, default=200, help="steps timed after the profile [default: 200]")
    ap.add_argument("--parallel", default="ddp", help="train.py's --parallel [default: ddp]")
    args = ap.parse_args(argv)
    got: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory(prefix="tk-stall-") as tmp:
        for i in range(args.runs):
            for on in (False, True):
                work = pathlib.Path(tmp) / f"{'on' if on else 'off'}-{i}"
                mean, median = one_run(work, args.parallel, args.after, on)
                got[on].append((mean, median))
                load = os.getloadavg()[0]
                print(f"{'with' if on else 'without'} {i + 1}: mean {mean:.2f} ms, median {median:.2f} ms "
                      f"(load {load:.1f})", flush=True)
    for name, k in (("median step", 1), ("mean step", 0)):
        off = statistics.median(r[k] for r in got[False])
        on = statistics.median(r[k] for r in got[True])
        print(f"{name} (median of {args.runs} runs): {off:.2f} ms without, {on:.2f} ms with "
              f"({(on / off - 1) * 100:+.1f} %)")
    # each run with the handler against the run without it just before (the pair shares the machine's load)
    for name, k in (("median step", 1), ("mean step", 0)):
        ratios = sorted(on[k] / off[k] for off, on in zip(got[False], got[True], strict=True))
        q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else ratios * 3
        print(f"{name}, with over without, pair by pair: median {(statistics.median(ratios) - 1) * 100:+.1f} % "
              f"(quartiles {(q[0] - 1) * 100:+.1f} to {(q[-1] - 1) * 100:+.1f} %, all {(ratios[0] - 1) * 100:+.1f} "
              f"to {(ratios[-1] - 1) * 100:+.1f} %)")
    spread = [r[0] for r in got[False]]
    print(f"the runs without the handler: mean step {min(spread):.2f} to {max(spread):.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
