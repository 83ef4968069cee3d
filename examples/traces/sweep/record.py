"""Record the plan sweep shipped here: 10 plans of one GPT on CPU Gloo, each recorded 3 times, interleaved.

    nice -n 5 python examples/traces/sweep/record.py                 # record into a scratch dir, then ship
    python examples/traces/sweep/record.py --raw /tmp/sweep --table  # only the table, from recordings made
    nice -n 5 python examples/traces/sweep/record.py --model small --out examples/traces/sweep-small
                                                                     # the same plans of another model
    nice -n 5 python examples/traces/sweep/record.py --plans pp --out examples/traces/sweep-pp
                                                                     # 2 pipeline stages: 2, 4 and 8
                                                                     # micro-batches of 4 and of 8

Plans drift up to 1.5x within minutes on a shared machine, so each round records every plan once (rounds
in rotated order) and a plan's figure is the least of its recordings' medians. A recording's step, per
profiled step k, is the longest ProfilerStep#k over its ranks (the job waits for its slowest rank); its
median is over its profiled steps. The table (measured.csv) is computed here from the traces' own
ProfilerStep events, not by tracekit. Shipped: per plan, the recording whose median is the plan's least,
as PLAN/rank*_trace.json.gz. The cores column is the machine's (its ranks share them: whatif --cores).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
TRAIN = HERE.parent.parent / "gpt" / "train.py"
MODELS = {  # base: the sweep shipped here; small: examples/traces/sweep-small, twice the layers at half the
    # width and twice the vocabulary, which the step model was not built on (a check that it holds elsewhere)
    "base": ["--layers", "2", "--hidden", "256", "--heads", "4", "--vocab", "512", "--seq", "128"],
    "small": ["--layers", "4", "--hidden", "128", "--heads", "4", "--vocab", "1024", "--seq", "128"],
}
MODEL = MODELS["base"]
# name -> (ranks, train.py flags)
PLANS = {
    "ddp": (2, ["--parallel", "ddp", "--micro-batch", "8"]),
    "zero1": (2, ["--parallel", "zero1", "--micro-batch", "8"]),
    "zero2": (2, ["--parallel", "zero2", "--micro-batch", "8"]),
    "fsdp": (2, ["--parallel", "fsdp", "--micro-batch", "8"]),
    "tp": (2, ["--parallel", "tp", "--micro-batch", "8"]),
    "tp-sp": (2, ["--parallel", "tp-sp", "--micro-batch", "8"]),
    "pp-mb2": (2, ["--parallel", "pp", "--micro-batch", "8", "--micro-batches", "2"]),
    "pp-mb4": (2, ["--parallel", "pp", "--micro-batch", "4", "--micro-batches", "4"]),
    "tp2-dp2": (4, ["--parallel", "tp-dp", "--micro-batch", "8"]),
    "pp2-dp2": (4, ["--parallel", "pp-dp", "--micro-batch", "8", "--micro-batches", "2"]),
}
# the pipeline sweep (examples/traces/sweep-pp): 2 stages (1F1B), 2, 4 and 8 micro-batches of 4 and of 8 rows
PP_PLANS = {f"pp-mb{m}x{b}": (2, ["--parallel", "pp", "--micro-batch", str(b), "--micro-batches", str(m)])
            for b in (4, 8) for m in (2, 4, 8)}
PLAN_SETS = {"all": PLANS, "pp": PP_PLANS}
ROUNDS, STEPS = 3, 4


def record(name: str, dest: pathlib.Path) -> None:
    ranks, flags = PLANS[name]
    args = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(ranks), str(TRAIN), *flags,
            *MODEL, "--steps", str(STEPS), "--trace-dir", str(dest)]
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "load.txt").write_text(f"{os.getloadavg()[0]:.2f}\n")  # the machine's 1-minute load as it began
    proc = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    if proc.returncode:
        raise SystemExit(f"{name} failed:\n{proc.stderr[-3000:]}")


def trace_files(rec: pathlib.Path) -> list[pathlib.Path]:
    return sorted(rec.glob("*/rank*_trace.json.gz")) or sorted(rec.glob("rank*_trace.json.gz"))


def steps_ms(rec: pathlib.Path) -> list[float]:
    """Per profiled step, the longest ProfilerStep over the recording's ranks, ms."""
    per: dict[str, float] = {}
    for f in trace_files(rec):
        with gzip.open(f) as fh:
            for e in json.load(fh)["traceEvents"]:
                if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"):
                    per[e["name"]] = max(per.get(e["name"], 0.0), e["dur"] / 1e3)
    return [per[k] for k in sorted(per, key=lambda n: int(n.split("#")[1]))]


def load(rec: pathlib.Path) -> str:
    """The 1-minute load average as the recording began ('-' where it was not written down)."""
    f = rec / "load.txt"
    return f.read_text().strip() if f.exists() else "-"


def table(raw: pathlib.Path, out: pathlib.Path, ship: bool) -> list[dict]:
    rows = []
    for name, (ranks, _) in PLANS.items():
        recs = sorted(raw.glob(f"{name}/rec*"))
        meds = {r.name: statistics.median(steps_ms(r)) for r in recs}
        best = min(meds, key=meds.get)
        least = meds[best]
        rows.append({"plan": name, "ranks": ranks, "recordings": len(meds),
                     "medians_ms": " ".join(f"{meds[k]:.1f}" for k in sorted(meds)),
                     "step_ms": round(least, 1), "spread_pct": round(100 * (max(meds.values()) / least - 1), 1),
                     "shipped": best, "cores": os.cpu_count(),
                     "load": " ".join(load(raw / name / k) for k in sorted(meds))})
        if ship:
            dest = out / name
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir(parents=True)
            for f in trace_files(raw / name / best):
                shutil.copy(f, dest / f.name)
    with open(out / "measured.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return rows


def main(argv=None) -> int:
    global MODEL, PLANS, STEPS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--raw", default=None, help="where the recordings go (default: a scratch dir)")
    ap.add_argument("--table", action="store_true", help="only write the table and ship, from --raw")
    ap.add_argument("--model", choices=sorted(MODELS), default="base", help="which model (default: base)")
    ap.add_argument("--plans", choices=sorted(PLAN_SETS), default="all",
                    help="which plans: all (the plan sweep, default) or pp (the pipeline sweep)")
    ap.add_argument("--steps", type=int, default=STEPS, help=f"profiled steps per recording (default: {STEPS})")
    ap.add_argument("--out", default=str(HERE), help="where to ship the traces and measured.csv (default: here)")
    args = ap.parse_args(argv)
    MODEL, PLANS, STEPS = MODELS[args.model], PLAN_SETS[args.plans], args.steps
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    raw = pathlib.Path(args.raw or tempfile.mkdtemp(prefix="tracekit-sweep-"))
    names = list(PLANS)
    if not args.table:
        for k in range(ROUNDS):
            cut = k * len(names) // ROUNDS
            order = names[cut:] + names[:cut]  # rotated: no plan always first
            for name in order:
                dest = raw / name / f"rec{k + 1}"
                if not trace_files(dest):
                    print(f"round {k + 1}: {name}", flush=True)
                    record(name, dest)
    for r in table(raw, out, ship=True):
        print(r, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
