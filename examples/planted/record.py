"""Record planted stragglers against plain runs, and measure what each costs from the traces' own steps.

    OMP_NUM_THREADS=1 nice -n 5 python examples/planted/record.py --out planted-runs --repeats 4
    OMP_NUM_THREADS=1 nice -n 5 python examples/planted/record.py --out planted-runs --repeats 4 \\
        --ship examples/traces          # and copy one recording of each planted run into examples/traces

    OMP_NUM_THREADS=1 nice -n 5 python examples/planted/record.py --out planted-cases --repeats 3 --ms 300 \\
        --cases --ship examples/traces   # more plants: before the forward, inside the optimizer's step, two
                                         # stragglers of four, each against its plain twin (CASES)

Each recording is one line of examples/gpt/train.py under torchrun, 2 ranks, Gloo on CPU, 4 profiled steps:

    python -m torch.distributed.run --nproc_per_node 2 examples/gpt/train.py --parallel SCHEME --steps 4 \\
        --trace-dir OUT/SCHEME-VARIANT-rREPEAT [--delay 1:MS | --slow 1:MS]

VARIANT is plain, delay (rank 1 sleeps MS before each backward: host-bound) or slow (rank 1 multiplies
matrices for MS before each backward: compute-bound). The runs are interleaved (repeat, scheme, variant) so
that the machine's drift falls on every variant alike.

A recording's step: for each profiled step, the longest ProfilerStep#N of the two ranks (the job waits for
its slowest rank); the recording's median of those. A variant's median: the median of its recordings'
medians; its spread: their least and greatest. A planted cause's cost: the difference of the variant's
median and the plain runs' (cost_ms), of their least medians (cost_of_least_ms: other work on a shared
machine only ever adds time, so the least is the figure least touched by it), and the range over every
pair of recordings (cost_least_ms, cost_greatest_ms). Written to OUT/measured.json (and, with --ship, to
SHIP/planted.json), computed from the raw JSON alone: no tracekit code measures its own truth.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
TRAIN = HERE.parent / "gpt" / "train.py"
SCHEMES = ("ddp", "fsdp", "tp", "pp")
PLANTED_RANK = 1


# more plants (--cases): where the sleep goes, and two stragglers of four; each against a plain twin of its
# world size. name: (ranks, the planted ranks, train.py's extra arguments; MS stands for --ms)
CASES = {
    "ddp-plain": (2, (), []),
    "ddp-delay-forward": (2, (1,), ["--delay", "1:MS", "--plant-at", "forward"]),
    "ddp-delay-optimizer": (2, (1,), ["--delay", "1:MS", "--plant-at", "optimizer"]),
    "ddp4-plain": (4, (), []),
    "ddp4-delay-two": (4, (1, 2), ["--delay", "1,2:MS"]),
}


def command(scheme: str, variant: str, ms: float, trace_dir: pathlib.Path) -> list[str]:
    if variant in CASES:  # (scheme: ddp)
        ranks, _, extra = CASES[variant]
        return ([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(ranks), str(TRAIN),
                 "--parallel", "ddp", "--steps", "4", "--trace-dir", str(trace_dir)]
                + [a.replace("MS", f"{ms:g}") for a in extra])
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", str(TRAIN),
           "--parallel", scheme, "--steps", "4", "--trace-dir", str(trace_dir)]
    if variant != "plain":
        cmd += [f"--{variant}", f"{PLANTED_RANK}:{ms:g}"]
    return cmd


def record_cases(out: pathlib.Path, ship: str | None, repeats: int, ms: float) -> dict:
    """--cases: each of CASES recorded ``repeats`` times, interleaved; a plant's cost against its plain
    twin of the same world size (the medians' difference, and the range over pairs of recordings)."""
    recs: dict = {name: [] for name in CASES}
    for repeat in range(repeats):
        for name in CASES:
            recs[name].append(record(out, "cases", name, ms, repeat))
    summary = {"planted_ms": ms, "cases": {}}
    for name, (ranks, planted, _) in CASES.items():
        medians = [r["median_ms"] for r in recs[name]]
        row = {"ranks": ranks, "planted_ranks": list(planted), "median_ms": round(statistics.median(medians), 3),
               "least_ms": min(medians), "greatest_ms": max(medians), "recordings": recs[name]}
        if planted:
            twin = summary["cases"]["ddp-plain" if ranks == 2 else "ddp4-plain"]
            row["cost_ms"] = round(row["median_ms"] - twin["median_ms"], 3)
            row["cost_least_ms"] = round(row["least_ms"] - twin["greatest_ms"], 3)
            row["cost_greatest_ms"] = round(row["greatest_ms"] - twin["least_ms"], 3)
            if ship:
                rec = closest(recs[name], row["median_ms"])
                dest = pathlib.Path(ship) / f"planted-{name}"
                shutil.rmtree(dest, ignore_errors=True)
                shutil.copytree(out / rec["dir"], dest)
                row["shipped"] = {"dir": dest.name, "median_ms": rec["median_ms"]}
        summary["cases"][name] = row
        print(f"{name}: median {row['median_ms']:.1f} ms" + (f", costs {row['cost_ms']:.1f} ms a step (pairs: "
              f"{row['cost_least_ms']:.1f} to {row['cost_greatest_ms']:.1f})" if planted else ""), flush=True)
    text = json.dumps(summary, indent=1) + "\n"
    (out / "cases.json").write_text(text)
    if ship:
        (pathlib.Path(ship) / "planted-cases.json").write_text(text)
    return summary


def step_ms(trace_dir: pathlib.Path) -> list[float]:
    """Per profiled step, the longest rank's ProfilerStep duration (ms), from the raw traces."""
    per_step: dict[str, float] = {}
    for path in sorted(trace_dir.rglob("rank*_trace.json.gz")):
        for e in json.load(gzip.open(path))["traceEvents"]:
            if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"):
                per_step[e["name"]] = max(per_step.get(e["name"], 0.0), float(e["dur"]) / 1e3)
    if not per_step:
        raise SystemExit(f"{trace_dir}: no ProfilerStep in the traces; the recording failed")
    return [per_step[k] for k in sorted(per_step, key=lambda n: int(n.split("#")[1]))]


def record(out: pathlib.Path, scheme: str, variant: str, ms: float, repeat: int) -> dict:
    trace_dir = out / f"{scheme}-{variant}-r{repeat}"
    cmd = command(scheme, variant, ms, trace_dir)
    if not trace_dir.exists():
        env = dict(os.environ, OMP_NUM_THREADS="1")
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=HERE.parent.parent)
        if proc.returncode:
            shutil.rmtree(trace_dir, ignore_errors=True)
            raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    steps = step_ms(trace_dir)
    print(f"  {trace_dir.name}: median step {statistics.median(steps):.1f} ms of {len(steps)}", flush=True)
    shown = " ".join(["python"] + cmd[1:]).replace(str(TRAIN), "examples/gpt/train.py")
    return {"dir": trace_dir.name, "command": shown,
            "steps_ms": [round(s, 3) for s in steps], "median_ms": round(statistics.median(steps), 3)}


def summarize(recs: dict, ms: float, shipped: dict) -> dict:
    out = {"planted_rank": PLANTED_RANK, "planted_ms": ms, "schemes": {}}
    for scheme, variants in recs.items():
        row = {}
        for variant, rs in variants.items():
            medians = [r["median_ms"] for r in rs]
            row[variant] = {"median_ms": round(statistics.median(medians), 3), "least_ms": min(medians),
                            "greatest_ms": max(medians), "recordings": rs}
        plain = row["plain"]
        for variant in ("delay", "slow"):
            if variant in row:
                v = row[variant]
                v["cost_ms"] = round(v["median_ms"] - plain["median_ms"], 3)
                # the noise floor: each variant's least median (a shared machine only ever adds time)
                v["cost_of_least_ms"] = round(v["least_ms"] - plain["least_ms"], 3)
                # the difference's range over any pair of recordings: its spread
                v["cost_least_ms"] = round(v["least_ms"] - plain["greatest_ms"], 3)
                v["cost_greatest_ms"] = round(v["greatest_ms"] - plain["least_ms"], 3)
                if (scheme, variant) in shipped:
                    name, rec = shipped[(scheme, variant)]
                    base = shipped.get((scheme, "plain"), (None, closest(row["plain"]["recordings"],
                                                                         plain["median_ms"])))[1]
                    v["shipped"] = {"dir": name, "median_ms": rec["median_ms"], "plain_dir": base["dir"],
                                    "plain_median_ms": base["median_ms"],
                                    "cost_ms": round(rec["median_ms"] - base["median_ms"], 3)}
        out["schemes"][scheme] = row
    return out


def closest(recordings: list[dict], target: float) -> dict:
    return min(recordings, key=lambda r: abs(r["median_ms"] - target))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="planted-runs")
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--ms", type=float, default=100.0, help="the planted delay or compute per step (ms)")
    ap.add_argument("--schemes", default=",".join(SCHEMES))
    ap.add_argument("--variants", default="plain,delay,slow")
    ap.add_argument("--ship", help="copy each planted variant's most typical recording here as planted-SCHEME-VARIANT")
    ap.add_argument("--ship-plain", default="", help="schemes whose plain recording is shipped too")
    ap.add_argument("--cases", action="store_true", help="record CASES instead (more plants against plain twins; "
                                                         "--ship writes planted-cases.json)")
    args = ap.parse_args(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.cases:
        record_cases(out, args.ship, args.repeats, args.ms)
        return 0
    schemes, variants = args.schemes.split(","), args.variants.split(",")
    recs: dict = {s: {v: [] for v in variants} for s in schemes}
    for repeat in range(args.repeats):
        for scheme in schemes:
            for variant in variants:
                recs[scheme][variant].append(record(out, scheme, variant, args.ms, repeat))
    shipped = {}
    if args.ship:
        for scheme in schemes:
            for variant in variants:
                if variant == "plain" and scheme not in args.ship_plain.split(","):
                    continue
                rs = recs[scheme][variant]
                rec = closest(rs, statistics.median(r["median_ms"] for r in rs))
                name = f"planted-{scheme}-{variant}"
                dest = pathlib.Path(args.ship) / name
                shutil.rmtree(dest, ignore_errors=True)
                shutil.copytree(out / rec["dir"], dest)
                shipped[(scheme, variant)] = (name, rec)
    summary = summarize(recs, args.ms, shipped)
    text = json.dumps(summary, indent=1) + "\n"
    (out / "measured.json").write_text(text)
    if args.ship:
        (pathlib.Path(args.ship) / "planted.json").write_text(text)
    for scheme, row in summary["schemes"].items():
        for variant in ("delay", "slow"):
            if variant in row:
                v = row[variant]
                print(f"{scheme} {variant}: costs {v['cost_ms']:.1f} ms a step (of least medians "
                      f"{v['cost_of_least_ms']:.1f}; pairs of recordings: {v['cost_least_ms']:.1f} to "
                      f"{v['cost_greatest_ms']:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
