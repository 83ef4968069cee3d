"""The study of "Demystifying the Communication Characteristics for Distributed Transformer Models"
(Anthony et al., HOTI 2024) at its scales, from tracekit.analytic (validated with 0 byte error on the CPU
runs of examples/gpt): GPT-3 family models, sequences of 512 to 8192 tokens, DP, ZeRO-1/2/3, TP, TP+SP
and PP on NCCL.

    python examples/paper/study.py --out paper/            # figures (PNG) and numbers (study.json)
    python examples/paper/study.py --out paper/ --quick    # a smaller grid (what the test runs)

Two byte counts per collective: message bytes as nccl-tests counts them (what the traces show), and
bus traffic = message bytes x nccl-tests' bus factor (allreduce 2(n-1)/n, allgather/reduce_scatter
(n-1)/n, send/recv 1), which is what a link carries per rank and what the paper's volume comparisons use.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
from tracekit.analytic import PRESETS, GPTShape, Plan, predict_rank, total_params
from tracekit.comms.bandwidth import busbw_factor

MODELS = ["gpt3-125m", "gpt3-350m", "gpt3-760m", "gpt3-1.3b", "gpt3-2.7b", "gpt3-6.7b", "gpt3-13b", "gpt3-175b"]
SEQS = [512, 1024, 2048, 4096, 8192]
GROUP = {"DP": "dp", "TP": "tp", "PP": "pp"}


def shape(model: str, seq: int | None = None, micro_batches: int = 1) -> GPTShape:
    p = dict(PRESETS[model])
    if seq:
        p["seq"] = seq
    p["micro_batches"] = micro_batches
    return GPTShape(**p)


def schemes(n: int) -> dict[str, Plan]:
    """The study's parallelism schemes on n ranks (NCCL)."""
    return {"DP": Plan(dp=n, backend="nccl"), "ZeRO-1": Plan(dp=n, zero=1, backend="nccl"),
            "ZeRO-2": Plan(dp=n, zero=2, backend="nccl"), "ZeRO-3": Plan(dp=n, zero=3, backend="nccl"),
            "TP": Plan(tp=n, backend="nccl"), "TP+SP": Plan(tp=n, sequence_parallel=True, backend="nccl"),
            "PP": Plan(pp=n, backend="nccl")}


def per_rank(m: GPTShape, plan: Plan, rank: int = 0) -> list[dict]:
    """One step of one rank: each family of collectives with count, message size, bytes and traffic."""
    out = []
    for e in predict_rank(m, plan, rank):
        n = getattr(plan, GROUP[e.group])
        f = busbw_factor(e.collective, n) or 0.0
        out.append({"collective": e.collective, "group": e.group, "count": e.count, "bytes": e.bytes,
                    "message_bytes": e.bytes // e.count, "traffic_bytes": e.bytes * f, "why": e.why})
    return out


def totals(rows: list[dict]) -> dict:
    return {"count": sum(r["count"] for r in rows), "bytes": sum(r["bytes"] for r in rows),
            "traffic_bytes": sum(r["traffic_bytes"] for r in rows)}


def human_axis(ax, axis: str = "y") -> None:
    """Ticks at powers of two, labelled in KiB/MiB/GiB, on a log axis."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    def fmt(v, _pos):
        for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
            if v >= size:
                return f"{v / size:g} {unit}"
        return f"{v:g} B"
    a = ax.yaxis if axis == "y" else ax.xaxis
    a.set_major_locator(LogLocator(base=2, numticks=12))
    a.set_major_formatter(FuncFormatter(fmt))
    a.set_minor_formatter(NullFormatter())


def run(out: pathlib.Path, quick: bool) -> dict:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = 8
    models = ["gpt3-125m", "gpt3-1.3b", "gpt3-13b"] if quick else MODELS
    seqs = [512, 2048, 8192] if quick else SEQS
    base = "gpt3-1.3b"
    result: dict = {"ranks": n, "base_model": base}

    # 1. message sizes per collective and scheme (base model, seq 2048)
    sizes = {name: per_rank(shape(base, micro_batches=2 * n if plan.pp > 1 else 1), plan)
             for name, plan in schemes(n).items()}
    result["message_sizes"] = sizes
    fig, ax = plt.subplots(figsize=(9, 4))
    for i, rows in enumerate(sizes.values()):
        for r in rows:
            ax.scatter(r["message_bytes"], i, s=12 + 4 * r["count"] ** 0.5, alpha=0.6,
                       label=r["collective"], color={"allreduce": "C0", "allgather": "C1", "reduce_scatter": "C2",
                                                     "broadcast": "C3", "send": "C4", "recv": "C5"}[r["collective"]])
    ax.set_xscale("log")
    human_axis(ax, "x")
    ax.set_yticks(range(len(sizes)), list(sizes))
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles, strict=True))
    ax.legend(uniq.values(), uniq.keys(), fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_xlabel("message size (area: messages per step)")
    ax.set_title(f"Message sizes per collective and scheme ({base}, {n} ranks, seq 2048)")
    fig.tight_layout()
    fig.savefig(out / "message_sizes.png", dpi=110)
    plt.close(fig)

    # 1b. traffic per scheme (ZeRO-1/2/3 against DP; TP and TP+SP, per layer too; PP)
    traffic = {name: totals(rows)["traffic_bytes"] for name, rows in sizes.items()}
    layers = PRESETS[base]["layers"]
    result["traffic_by_scheme"] = traffic
    result["tp_traffic_per_layer"] = {k: traffic[k] / layers for k in ("TP", "TP+SP")}
    fig, ax = plt.subplots(figsize=(7, 3.6))
    ax.bar(list(traffic), list(traffic.values()), color=[f"C{i}" for i in range(len(traffic))])
    ax.set_yscale("log")
    human_axis(ax)
    for i, v in enumerate(traffic.values()):
        ax.text(i, v, f"{v / 2**30:.2f} GiB", ha="center", va="bottom", fontsize=7)
    ax.set_ylabel("bus traffic per rank and step")
    ax.set_title(f"Traffic per scheme ({base}, {n} ranks, seq 2048; TP per layer: "
                 f"{traffic['TP'] / layers / 2**20:.0f} MiB, TP+SP {traffic['TP+SP'] / layers / 2**20:.0f} MiB)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "traffic_by_scheme.png", dpi=110)
    plt.close(fig)

    # 2. traffic against sequence length, and 3. against model size
    by_seq = {name: [totals(per_rank(shape(base, s, 2 * n if plan.pp > 1 else 1), plan))["traffic_bytes"]
                     for s in seqs] for name, plan in schemes(n).items() if name in ("DP", "ZeRO-3", "TP", "PP")}
    by_model = {name: [totals(per_rank(shape(m, micro_batches=2 * n if plan.pp > 1 else 1), plan))["traffic_bytes"]
                       for m in models] for name, plan in schemes(n).items() if name in ("DP", "ZeRO-3", "TP", "PP")}
    result["traffic_by_seq"] = {"seq": seqs, **by_seq}
    result["traffic_by_model"] = {"model": models, "params": [total_params(shape(m)) for m in models], **by_model}
    for fname, xs, series, xlabel in (("traffic_vs_seq.png", seqs, by_seq, "sequence length (tokens)"),
                                      ("traffic_vs_model.png", result["traffic_by_model"]["params"], by_model,
                                       "parameters")):
        fig, ax = plt.subplots(figsize=(6, 3.8))
        for name, ys in series.items():
            ax.plot(xs, ys, "o-", label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        human_axis(ax)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("bus traffic per rank and step")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / fname, dpi=110)
        plt.close(fig)

    # 4. conclusions, as numbers
    t = {name: totals(rows) for name, rows in sizes.items()}
    pp_rows = sizes["PP"]
    result["conclusions"] = {
        "zero3_over_dp_traffic": t["ZeRO-3"]["traffic_bytes"] / t["DP"]["traffic_bytes"],
        "zero1_over_dp_traffic": t["ZeRO-1"]["traffic_bytes"] / t["DP"]["traffic_bytes"],
        "zero2_over_dp_traffic": t["ZeRO-2"]["traffic_bytes"] / t["DP"]["traffic_bytes"],
        "dp_traffic_seq_ratio_last_first": by_seq["DP"][-1] / by_seq["DP"][0],
        "tp_traffic_seq_ratio_last_first": by_seq["TP"][-1] / by_seq["TP"][0],
        "pp_traffic_seq_ratio_last_first": by_seq["PP"][-1] / by_seq["PP"][0],
        "seq_ratio_last_first": seqs[-1] / seqs[0],
        "tp_messages_per_step": t["TP"]["count"], "dp_messages_per_step": t["DP"]["count"],
        "pp_p2p_messages_per_step": sum(r["count"] for r in pp_rows),
        "pp_p2p_message_bytes": max(r["message_bytes"] for r in pp_rows),
        "dp_largest_message_bytes": max(r["message_bytes"] for r in sizes["DP"]),
        "tp_sp_over_tp_traffic": t["TP+SP"]["traffic_bytes"] / t["TP"]["traffic_bytes"],
    }
    (out / "study.json").write_text(json.dumps(result, indent=1))
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="paper")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args(argv)
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    res = run(out, a.quick)
    for k, v in res["conclusions"].items():
        print(f"{k:34s} {v:,.3f}" if isinstance(v, float) else f"{k:34s} {v:,}")
    print(f"figures and study.json in {os.path.abspath(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
