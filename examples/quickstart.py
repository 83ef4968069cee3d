"""Profile a small data-parallel training job with tracekit, end to end.

Copy this one file into your project (it needs torch and tracekit, nothing else), then:

    python -m torch.distributed.run --nproc_per_node 2 quickstart.py --trace-dir traces/quick
    tracekit validate traces/quick
    tracekit report traces/quick summary

or, with each rank making its own part of the run beside the training (rank 0 reduces the parts at the end):

    python -m torch.distributed.run --nproc_per_node 2 quickstart.py --trace-dir traces/quick --run-dir runs/quick
    tracekit report runs/quick summary

Two ranks train a small GPT (torch's own TransformerEncoderLayer, pre-norm, causal) under
DistributedDataParallel: Gloo on CPU, NCCL when CUDA is there. torch.profiler numbers steps from 0: it
waits through step 0, warms up on step 1 and records steps 2 and 3 (one cycle); tracekit's handler writes
DIR/iteration_4/rank{0,1}_trace.json.gz (named for the step count when the cycle ended), and
record_config stores the model and the plan in them so that `tracekit validate` can check every allreduce
against tracekit.analytic.
"""

import argparse
import os
import sys

try:
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    import tracekit
    from tracekit.profiler import record_config, trace_handler, wait_for_parts
except ImportError as exc:  # what to install, in one line (--help too needs them: the model is a torch module)
    sys.exit(f"quickstart.py needs torch and tracekit ({exc}): pip install torch==2.13.0 (the CPU build the "
             "README pins: an unpinned torch pulls a multi-GB CUDA build; any torch >= 2.1 runs it), and tracekit "
             "from its checkout (pip install -e .)")


class GPT(nn.Module):
    """Token and position embeddings, pre-norm transformer blocks with one fused q/k/v projection
    (torch's TransformerEncoderLayer), a final norm and an untied LM head."""

    def __init__(self, layers, hidden, heads, vocab, seq):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, hidden), nn.Embedding(seq, hidden)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(hidden, heads, 4 * hidden, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=True) for _ in range(layers))
        self.ln_f, self.head = nn.LayerNorm(hidden), nn.Linear(hidden, vocab, bias=False)

    def forward(self, idx):  # idx: (B, T) token ids -> logits (B, T, V)
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        causal = nn.Transformer.generate_square_subsequent_mask(T, device=idx.device)
        for block in self.blocks:
            x = block(x, src_mask=causal, is_causal=True)
        return self.head(self.ln_f(x))


ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--trace-dir", required=True, help="where the traces go (one iteration_N directory per cycle)")
ap.add_argument("--steps", type=int, default=2, help="profiled steps")
# (not --run: torchrun would take it for an abbreviation of its own --run-path)
ap.add_argument("--run-dir", default=None,
                help="a run directory (or s3://bucket/prefix): each rank makes its part of it from its trace")
args = ap.parse_args()

backend = "nccl" if torch.cuda.is_available() else "gloo"
dist.init_process_group(backend)
rank, world = dist.get_rank(), dist.get_world_size()
device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if backend == "nccl" else torch.device("cpu")
if device.type == "cuda":
    torch.cuda.set_device(device)
torch.manual_seed(0)

# the model and the same numbers for tracekit.analytic (fused_qkv: one q/k/v projection, as torch's layer has)
layers, hidden, heads, vocab, seq, batch = 2, 64, 4, 256, 32, 4
model = DDP(GPT(layers, hidden, heads, vocab, seq).to(device), bucket_cap_mb=25)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
config = {"model": {"layers": layers, "hidden": hidden, "heads": heads, "vocab": vocab, "seq": seq,
                    "micro_batch": batch, "dtype": "float32", "fused_qkv": True},
          "plan": {"dp": world, "zero": 0, "backend": backend, "bucket_cap_mb": 25,
                   "groups": {"DP": dist._get_process_group_name(dist.group.WORLD)}},
          "steps": args.steps}

activities = [torch.profiler.ProfilerActivity.CPU]
if backend == "nccl":
    activities.append(torch.profiler.ProfilerActivity.CUDA)
schedule = torch.profiler.schedule(wait=1, warmup=1, active=args.steps, repeat=1)  # repeat=1: one cycle, one run
gen = torch.Generator().manual_seed(1234 + rank)
with torch.profiler.profile(activities=activities, schedule=schedule, record_shapes=True,
                            on_trace_ready=trace_handler(args.trace_dir, run=args.run_dir)) as prof:
    record_config(prof, config)
    for step in range(2 + args.steps):
        tokens = torch.randint(0, vocab, (batch, seq + 1), generator=gen).to(device)
        logits = model(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        prof.step()
        if rank == 0:
            print(f"step {step} ({'profiled' if step >= 2 else 'not profiled'}): loss {loss.item():.3f}", flush=True)
wait_for_parts()  # this rank's part of --run-dir, made in a process of its own while the steps ran
dist.barrier()
if rank == 0:
    print(f"traces of {world} ranks in {os.path.abspath(args.trace_dir)}; next: tracekit validate {args.trace_dir}")
    if args.run_dir:  # every rank's part is there: only the cross-rank work is left
        tracekit.reduce(args.run_dir)
        where = args.run_dir if "://" in args.run_dir else os.path.abspath(args.run_dir)  # (s3://bucket/run as is)
        print(f"run of {world} ranks in {where}; next: tracekit report {args.run_dir} summary")
dist.destroy_process_group()
