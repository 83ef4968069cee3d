"""Train the small GPT under one parallelism scheme, profiled with torch.profiler through tracekit.

    python -m torch.distributed.run --nproc_per_node 2 examples/gpt/train.py --parallel ddp --trace-dir traces/ddp
    python -m torch.distributed.run --nproc_per_node 2 examples/gpt/train.py --parallel zero1 --trace-dir traces/zero1
    python -m torch.distributed.run --nproc_per_node 2 examples/gpt/train.py --parallel zero2 --trace-dir traces/zero2
    python -m torch.distributed.run --nproc_per_node 2 examples/gpt/train.py --parallel fsdp --trace-dir traces/fsdp
    python -m torch.distributed.run --nproc_per_node 2 examples/gpt/train.py --parallel tp --trace-dir traces/tp
    python -m torch.distributed.run --nproc_per_node 2 examples/gpt/train.py --parallel tp-sp --trace-dir traces/tp-sp
    python -m torch.distributed.run --nproc_per_node 2 examples/gpt/train.py --parallel pp --trace-dir traces/pp
    python -m torch.distributed.run --nproc_per_node 4 examples/gpt/train.py --parallel tp-dp --trace-dir traces/tp-dp
    python -m torch.distributed.run --nproc_per_node 4 examples/gpt/train.py --parallel pp-dp --trace-dir traces/pp-dp
    python -m torch.distributed.run --nproc_per_node 2 examples/gpt/train.py --parallel tp --compile \
        --trace-dir traces/tp-compile
    python -m torch.distributed.run --nproc_per_node 2 examples/gpt/train.py --parallel ddp --delay 1:150 \
        --trace-dir traces/ddp-delay

--delay RANK:MS plants a host-bound straggler: that rank sleeps MS on its CPU before each step's backward
(before each pipeline step under pp; several ranks: 1,2:MS; --plant-at forward or optimizer puts it before
the forward or inside the optimizer's step). --slow RANK:MS plants a compute-bound one: that rank multiplies
matrices for MS before each backward. examples/planted/record.py records both against plain runs.

--compile runs the model through torch.compile (inductor; --compile aot_eager skips code generation):
its collectives become functional ops (_c10d_functional::all_reduce_ ...) inside the compiled graphs.

Gloo on CPU, NCCL when CUDA is there. Synthetic tokens. The profiler skips the first iterations (DDP
rebuilds its buckets and pipelining infers shapes there) and records --steps active ones.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import GPTConfig
from parallel import build_scheme

SCHEMES = ("ddp", "zero1", "zero2", "fsdp", "tp", "tp-sp", "pp", "tp-dp", "pp-dp")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parallel", choices=SCHEMES, required=True)
    ap.add_argument("--trace-dir", required=True)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--micro-batches", type=int, default=2, help="pipeline micro-batches per step")
    ap.add_argument("--schedule", choices=("gpipe", "1f1b"), default="1f1b", help="pipeline schedule")
    ap.add_argument("--steps", type=int, default=2, help="profiled (active) steps")
    ap.add_argument("--compile", nargs="?", const="inductor",
                    help="torch.compile the model with this backend (inductor if none given; not pp)")
    ap.add_argument("--delay", type=rank_ms, help="RANK[,RANK...]:MS: those ranks sleep MS before each backward")
    ap.add_argument("--slow", type=rank_ms, help="RANK[,RANK...]:MS: those ranks compute MS of matmuls before each "
                                                  "backward")
    ap.add_argument("--plant-at", choices=("backward", "forward", "optimizer"), default="backward",
                    help="where --delay/--slow's work goes: before the backward, before the forward (the step's "
                         "start), or inside the optimizer's step (a pre-hook: inside its recorded op)")
    ap.add_argument("--run-dir", default=None,
                    help="each rank also makes its part of this run from its trace, beside the training "
                         "(trace_handler(DIR, run=RUN)); then `tracekit ingest --reduce RUN`")
    ap.add_argument("--after", type=int, default=0,
                    help="train this many more steps after the profiled ones and print their mean step time "
                         "(the handler's stall: compare with and without --run-dir)")
    return ap.parse_args(argv)


def rank_ms(text: str) -> tuple[frozenset, float]:
    ranks, sep, ms = text.partition(":")
    try:
        if sep:
            return frozenset(int(r) for r in ranks.split(",")), float(ms)
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"{text!r}: expected RANK[,RANK...]:MS, e.g. 1:150 or 1,2:150")


def planted_cause(args, rank: int):
    """The work a planted straggler does (where --plant-at says), or None on the other ranks."""
    if args.delay and rank in args.delay[0]:
        return lambda: time.sleep(args.delay[1] / 1e3)
    if args.slow and rank in args.slow[0]:
        a = torch.randn(384, 384)  # a few ms a product: few events

        def burn():
            end = time.perf_counter() + args.slow[1] / 1e3
            while time.perf_counter() < end:
                a @ a
        return burn
    return None


def setup():
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    return rank, world, device


def main(argv=None) -> int:
    args = parse_args(argv)
    rank, world, device = setup()
    cause = planted_cause(args, rank)
    args.before_backward = cause if args.plant_at == "backward" else None
    args.before_forward = cause if args.plant_at == "forward" else None
    args.in_optimizer = cause if args.plant_at == "optimizer" else None
    cfg = GPTConfig(n_layer=args.layers, n_head=args.heads, n_embd=args.hidden, vocab_size=args.vocab,
                    block_size=args.seq)
    step_fn, plan, groups = build_scheme(args, cfg, world, device)  # -> (step, plan, {role: group})
    # role (DP, TP, PP) -> process group name, so that validate can map groups to roles
    names = {role: dist._get_process_group_name(g) for role, g in groups.items()}
    plan["groups"] = names
    if args.compile:
        plan["compile"] = args.compile

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    from tracekit.profiler import gloo_threads, record_config, trace_handler

    config = {"model": {"layers": cfg.n_layer, "hidden": cfg.n_embd, "heads": cfg.n_head, "vocab": cfg.vocab_size,
                        "seq": args.seq, "micro_batch": args.micro_batch, "micro_batches": args.micro_batches,
                        "dtype": "float32"},
              "plan": plan, "steps": args.steps, "world": world,
              "gloo_threads": gloo_threads(groups)}  # Gloo worker threads -> groups, found before profiling
    gen = torch.Generator().manual_seed(1234 + rank)
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=args.steps, repeat=1)
    with torch.profiler.profile(activities=activities, schedule=schedule, record_shapes=True,
                                on_trace_ready=trace_handler(args.trace_dir, run=args.run_dir)) as prof:
        record_config(prof, config)
        after = []  # the seconds of each step after the profiled ones (the handler's work runs then)
        for it in range(2 + args.steps + args.after):
            start = time.perf_counter()
            tokens = torch.randint(0, cfg.vocab_size, (plan["batch"], args.seq + 1), generator=gen).to(device)
            step_fn(tokens[:, :-1], tokens[:, 1:])
            if it >= 2 + args.steps:
                if device.type == "cuda":
                    torch.cuda.synchronize()
                after.append(time.perf_counter() - start)
            prof.step()
            if rank == 0 and it < 2 + args.steps:
                print(f"{args.parallel}: step {it + 1}/{2 + args.steps}" + (" (profiled)" if it >= 2 else ""),
                      flush=True)
    if after and rank == 0:
        print(f"{args.parallel}: {len(after)} steps after the profile: mean {sum(after) / len(after) * 1e3:.2f} ms, "
              f"median {sorted(after)[len(after) // 2] * 1e3:.2f} ms", flush=True)
    if args.run_dir:
        from tracekit.profiler import wait_for_parts

        wait_for_parts()  # this rank's part, before the reduce below
    dist.barrier()
    if rank == 0:
        print(f"{args.parallel}: traces of {world} ranks in {os.path.abspath(args.trace_dir)}; "
              f"next: tracekit validate {args.trace_dir}", flush=True)
        if args.run_dir:
            import tracekit

            tracekit.reduce(args.run_dir)
            print(f"{args.parallel}: run of {world} ranks in {os.path.abspath(args.run_dir)}", flush=True)
    dist.destroy_process_group()
    return 0




if __name__ == "__main__":
    sys.exit(main())
