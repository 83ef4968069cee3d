"""The paper's figures from real runs: parallelism x sequence length x model size, tiny GPTs on CPU.

    python examples/sweep.py --out sweep/            # full sweep (a few minutes on 2 cores)
    python examples/sweep.py --out sweep/ --quick    # two schemes, two points per axis

For every run: train with examples/gpt/train.py under torchrun, ingest the traces, validate against the
analytic model. Writes sweep/*.png (tracekit.commands.plot) and sweep/results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import tracekit
from tracekit.commands import plot as tkplot

SCHEMES = {"ddp": 2, "zero1": 2, "fsdp": 2, "tp": 2, "tp-sp": 2, "pp": 2}


def train(scheme: str, out: pathlib.Path, **dims) -> pathlib.Path:
    trace_dir = out / "traces" / "-".join([scheme] + [f"{k}{v}" for k, v in sorted(dims.items())])
    label = f"{scheme} {' '.join(f'{k}={v}' for k, v in sorted(dims.items()))}"
    if trace_dir.exists():
        print(f"  {label}: traces already in {trace_dir}", flush=True)
    else:
        print(f"  {label}: training on {SCHEMES[scheme]} ranks -> {trace_dir}", flush=True)
        args = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(SCHEMES[scheme]),
                str(HERE / "gpt" / "train.py"), "--parallel", scheme, "--trace-dir", str(trace_dir), "--steps", "1"]
        for k, v in dims.items():
            args += [f"--{k}", str(v)]
        env = dict(os.environ, OMP_NUM_THREADS="1")
        proc = subprocess.run(args, capture_output=True, text=True, env=env)
        if proc.returncode:
            raise SystemExit(f"{scheme} {dims} failed:\n{proc.stderr[-2000:]}")
    return trace_dir


def measure(scheme, out, **dims) -> tuple[dict, object]:
    run = tracekit.open(train(scheme, out, **dims))
    rows = tracekit.validate(run).to_pylist()
    total = sum(r["measured_bytes"] for r in rows)
    return {"scheme": scheme, **dims, "measured_bytes": total,
            "predicted_bytes": sum(r["predicted_bytes"] for r in rows), "rows": rows}, run


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="sweep")
    ap.add_argument("--quick", action="store_true", help="ddp and tp, two points per axis")
    args = ap.parse_args(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    schemes = ["ddp", "tp"] if args.quick else list(SCHEMES)
    seqs = [16, 32] if args.quick else [16, 32, 64]
    hiddens = [32, 64] if args.quick else [32, 64, 128]
    results, runs = [], {}
    print(f"sweep: {len(schemes) * (len(seqs) + len(hiddens))} runs of {', '.join(schemes)} into {out}/", flush=True)
    for s in schemes:
        for seq in seqs:
            r, run = measure(s, out, seq=seq, hidden=64)
            results.append({**r, "axis": "seq"})
            if seq == 32:
                runs[s] = run
        for h in hiddens:
            r, _ = measure(s, out, seq=32, hidden=h)
            results.append({**r, "axis": "hidden"})
    tkplot.message_sizes(runs, str(out / "message_sizes.png"), "Message sizes per collective and scheme (seq 32)")
    tkplot.lines([r for r in results if r["axis"] == "seq"], "seq", "measured_bytes", "scheme",
                 str(out / "volume_vs_seq.png"), "sequence length", "bytes per step (all ranks)",
                 "Communication volume vs sequence length")
    tkplot.lines([r for r in results if r["axis"] == "hidden"], "hidden", "measured_bytes", "scheme",
                 str(out / "volume_vs_hidden.png"), "hidden size", "bytes per step (all ranks)",
                 "Communication volume vs model size")
    pts = [{**row, "label": r["scheme"]} for r in results for row in r["rows"]]
    tkplot.measured_vs_predicted(pts, str(out / "measured_vs_predicted.png"))
    (out / "results.json").write_text(json.dumps(results, indent=1))
    worst = max((abs(row["bytes_error_pct"] or 0) for r in results for row in r["rows"]), default=0)
    print(f"{len(results)} runs; largest byte error {worst:.3g} %; plots in {out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
