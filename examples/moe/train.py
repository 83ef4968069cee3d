"""Train a small mixture-of-experts GPT with expert parallelism, profiled with torch.profiler through tracekit.

    python -m torch.distributed.run --nproc_per_node 2 examples/moe/train.py --trace-dir traces/moe
    tracekit validate traces/moe

The GPT of examples/gpt with every block's MLP replaced by a mixture of experts, trained as Mixtral and
DeepSeek-V3 are (in the manner of torchtitan's expert parallelism, without its kernels):

- a router scores the experts for each token and sends it to its top-k (no capacity limit: no token is
  dropped, so how many rows go to each rank depends on the data);
- the experts are split over the ranks (expert parallelism, ep = world); per MoE layer and micro-batch:
  one all_to_all_single of the token counts per expert, then the dispatch all_to_all_single (each rank's
  top-k copies of its tokens go to the ranks holding their experts) and the combine all_to_all_single
  (the expert outputs come back); backward runs the two in reverse;
- the dense parameters (embeddings, attention, norms, routers, head) are data parallel: DDP allreduces
  their gradients; an expert's gradient stays on its rank.

Gloo on CPU. Synthetic tokens. The profiler skips two iterations and records --steps active ones.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn.functional as F
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gpt"))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from model import GPT, MLP, GPTConfig


class MoE(nn.Module):
    """Top-k routed experts, ``experts // ep`` of them on this rank. x: (B, T, C) -> (B, T, C)."""

    def __init__(self, cfg: GPTConfig, experts: int, top_k: int, group):
        super().__init__()
        self.top_k, self.group, self.ep = top_k, group, dist.get_world_size(group)
        self.local = experts // self.ep  # experts held here: global ids rank * local ... + local - 1
        self.router = nn.Linear(cfg.n_embd, experts, bias=False)
        self.experts = nn.ModuleList(MLP(cfg) for _ in range(self.local))

    def forward(self, x):
        B, T, C = x.shape
        x = x.reshape(B * T, C)
        weights, chosen = F.softmax(self.router(x), dim=-1).topk(self.top_k, dim=-1)  # (N, k) each
        # dispatch: the N*k routed copies, sorted by expert (so by the rank that holds it)
        order = chosen.flatten().argsort(stable=True)
        copies = x.repeat_interleave(self.top_k, dim=0)[order]  # (N*k, C)
        per_expert = torch.bincount(chosen.flatten(), minlength=self.local * self.ep)  # (E,)
        got = torch.empty_like(per_expert)  # got[src * local + j]: rows rank src sends to local expert j
        dist.all_to_all_single(got, per_expert, group=self.group)
        send = per_expert.view(self.ep, self.local).sum(1).tolist()
        recv = got.view(self.ep, self.local).sum(1).tolist()
        rows = funcol.all_to_all_single_autograd(copies, recv, send, self.group)  # by source, then expert
        # run each local expert on its rows (sorted by expert across sources), then restore the order
        expert_of = torch.arange(self.local).repeat(self.ep).repeat_interleave(got)
        by_expert = expert_of.argsort(stable=True)
        sizes = torch.bincount(expert_of, minlength=self.local).tolist()
        out = torch.cat([f(chunk) for f, chunk in zip(self.experts, rows[by_expert].split(sizes), strict=True)])
        out = out[by_expert.argsort()]
        # combine: the outputs go back to the ranks their tokens came from
        back = funcol.all_to_all_single_autograd(out, send, recv, self.group)  # (N*k, C) in dispatch order
        y = back[order.argsort()].view(B * T, self.top_k, C)
        return (weights.unsqueeze(-1) * y).sum(1).view(B, T, C)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace-dir", required=True)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--experts", type=int, default=4, help="experts per MoE layer (divisible by the ranks)")
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--steps", type=int, default=2, help="profiled (active) steps")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.experts % world:
        raise SystemExit(f"--experts {args.experts} must be divisible by the {world} ranks")
    torch.manual_seed(0)
    ep_group = dist.new_group(list(range(world)))  # expert parallel: a group (and Gloo threads) of its own
    cfg = GPTConfig(n_layer=args.layers, n_head=args.heads, n_embd=args.hidden, vocab_size=args.vocab,
                    block_size=args.seq)
    model = GPT(cfg)
    for block in model.blocks.values():
        block.mlp = MoE(cfg, args.experts, args.top_k, ep_group)
    from torch.nn.parallel import DistributedDataParallel as DDP
    experts = [n for n, _ in model.named_parameters() if ".experts." in n]
    DDP._set_params_and_buffers_to_ignore_for_model(model, experts)  # expert gradients stay local
    model = DDP(model, bucket_cap_mb=25)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    from tracekit.profiler import gloo_threads, record_config, trace_handler
    groups = {"DP": dist.group.WORLD, "EP": ep_group}
    config = {"model": {"layers": args.layers, "hidden": args.hidden, "heads": args.heads, "vocab": args.vocab,
                        "seq": args.seq, "micro_batch": args.micro_batch, "dtype": "float32",
                        "experts": args.experts, "top_k": args.top_k},
              "plan": {"scheme": "moe", "dp": world, "ep": world, "tp": 1, "pp": 1, "zero": 0,
                       "batch": args.micro_batch, "bucket_cap_mb": 25,
                       "groups": {role: dist._get_process_group_name(g) for role, g in groups.items()}},
              "steps": args.steps, "world": world,
              "gloo_threads": gloo_threads(groups)}  # Gloo worker threads -> groups, found before profiling
    gen = torch.Generator().manual_seed(1234 + rank)
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=args.steps, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule,
                                record_shapes=True, on_trace_ready=trace_handler(args.trace_dir)) as prof:
        record_config(prof, config)
        for it in range(2 + args.steps):
            tokens = torch.randint(0, cfg.vocab_size, (args.micro_batch, args.seq + 1), generator=gen)
            logits = model(tokens[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            prof.step()
            if rank == 0:
                print(f"moe: step {it + 1}/{2 + args.steps}, loss {loss.item():.3f}"
                      + (" (profiled)" if it >= 2 else ""), flush=True)
    dist.barrier()
    if rank == 0:
        print(f"moe: traces of {world} ranks in {os.path.abspath(args.trace_dir)}; "
              f"next: tracekit validate {args.trace_dir}", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
