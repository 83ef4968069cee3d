"""The parallelism schemes, each built from PyTorch's own parts. build_scheme -> (step_fn, plan)."""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from model import GPT

LR = 1e-3


def lm_loss(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def _train_step(model, opt, args):
    # compiled, the collectives become functional ops in its graphs
    forward = torch.compile(model, backend=args.compile) if args.compile else model

    if getattr(args, "in_optimizer", None):  # a planted straggler inside the optimizer's recorded step
        opt.register_step_pre_hook(lambda *_: args.in_optimizer())

    def step(x, y):
        if getattr(args, "before_forward", None):  # a planted straggler at the step's start
            args.before_forward()
        loss = lm_loss(forward(x), y)
        if args.before_backward:  # a planted straggler (train.py --delay, --slow)
            args.before_backward()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss
    return step


def ddp(args, cfg, world, device, zero=0):
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = DDP(GPT(cfg).to(device), bucket_cap_mb=25)
    if zero == 1:
        from torch.distributed.optim import ZeroRedundancyOptimizer
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.SGD, lr=LR,
                                      parameters_as_bucket_view=True)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=LR)
    # bucket_cap_mb given: torch's DDP caps its first bucket at it too (the 1 MiB first bucket is the default's)
    plan = {"scheme": "zero1" if zero else "ddp", "dp": world, "tp": 1, "pp": 1, "zero": zero,
            "sequence_parallel": False, "batch": args.micro_batch, "bucket_cap_mb": 25, "first_bucket_mb": 25}
    return _train_step(model, opt, args), plan, {"DP": dist.group.WORLD}


def fsdp(args, cfg, world, device, reshard=True):
    from torch.distributed.fsdp import fully_shard

    model = GPT(cfg).to(device)
    for block in model.blocks.values():
        fully_shard(block, reshard_after_forward=reshard)
    fully_shard(model, reshard_after_forward=reshard)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    plan = {"scheme": "fsdp" if reshard else "zero2", "dp": world, "tp": 1, "pp": 1, "zero": 3 if reshard else 2,
            "sequence_parallel": False, "batch": args.micro_batch}
    return _train_step(model, opt, args), plan, {"DP": dist.group.WORLD}


def tensor_parallel(model, mesh, sequence_parallel: bool):
    """Megatron sharding: q/k/v and fc by columns, proj and fc_out by rows (one allreduce after each
    row-parallel layer); with sequence parallelism, norms shard the sequence and the allreduces become
    allgather + reduce_scatter."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        PrepareModuleInput,
        RowwiseParallel,
        SequenceParallel,
        parallelize_module,
    )

    for block in model.blocks.values():
        plan = {"attn.q": ColwiseParallel(), "attn.k": ColwiseParallel(), "attn.v": ColwiseParallel(),
                "attn.proj": RowwiseParallel(), "mlp.fc": ColwiseParallel(), "mlp.fc_out": RowwiseParallel()}
        if sequence_parallel:
            plan.update({
                "ln1": SequenceParallel(), "ln2": SequenceParallel(),
                "attn": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
                "mlp": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
                "attn.proj": RowwiseParallel(output_layouts=Shard(1)),
                "mlp.fc_out": RowwiseParallel(output_layouts=Shard(1)),
            })
        parallelize_module(block, mesh, plan)
    if sequence_parallel:
        parallelize_module(model, mesh, {
            "wte": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
            "wpe": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
            "ln_f": SequenceParallel(),
            "head": ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate()),
        })
    return model


def tp(args, cfg, world, device, sequence_parallel=False):
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh(device.type, (world,), mesh_dim_names=("tp",))
    model = tensor_parallel(GPT(cfg).to(device), mesh, sequence_parallel)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    plan = {"scheme": "tp-sp" if sequence_parallel else "tp", "dp": 1, "tp": world, "pp": 1, "zero": 0,
            "sequence_parallel": sequence_parallel, "batch": args.micro_batch}
    return _train_step(model, opt, args), plan, {"TP": mesh.get_group("tp")}


def tp_dp(args, cfg, world, device):
    """2-D: tensor parallel inside pairs of ranks, FSDP2 (ZeRO-3) across them, as torchtitan does."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    tp_size = 2
    mesh = init_device_mesh(device.type, (world // tp_size, tp_size), mesh_dim_names=("dp", "tp"))
    model = tensor_parallel(GPT(cfg).to(device), mesh["tp"], sequence_parallel=False)
    for block in model.blocks.values():
        fully_shard(block, mesh=mesh["dp"], reshard_after_forward=True)
    fully_shard(model, mesh=mesh["dp"], reshard_after_forward=True)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    plan = {"scheme": "tp-dp", "dp": world // tp_size, "tp": tp_size, "pp": 1, "zero": 3,
            "sequence_parallel": False, "batch": args.micro_batch}
    return _train_step(model, opt, args), plan, {"DP": mesh.get_group("dp"), "TP": mesh.get_group("tp")}


def pp(args, cfg, world, device, dp=1):
    """Pipeline stages (world / dp of them), layers split evenly; GPipe or 1F1B over micro-batches. With
    dp > 1 each stage is replicated over dp ranks (ranks pp-major: stage = rank // dp) and wrapped in DDP,
    which the pipelining stage keeps from syncing until the last micro-batch's backward."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

    stages, rank = world // dp, dist.get_rank()
    if cfg.n_layer % stages:
        raise ValueError(f"--layers {cfg.n_layer} must divide into {stages} pipeline stages")
    mesh = init_device_mesh(device.type, (stages, dp), mesh_dim_names=("pp", "dp")) if dp > 1 else None
    me = rank // dp
    model = GPT(cfg).to(device)
    per = cfg.n_layer // stages
    keep = {str(i) for i in range(me * per, (me + 1) * per)}
    for name in list(model.blocks):
        if name not in keep:
            del model.blocks[name]
    if me != 0:
        model.wte = model.wpe = None
    if me != stages - 1:
        model.ln_f = model.head = None
    groups = {"PP": dist.group.WORLD}
    if mesh is not None:  # DDP's reducer refuses several forwards per backward: its buckets, by hand
        groups = {"PP": mesh.get_group("pp"), "DP": mesh.get_group("dp")}
    stage = PipelineStage(model, me, stages, device, group=groups["PP"])
    sched_cls = Schedule1F1B if args.schedule == "1f1b" else ScheduleGPipe
    schedule = sched_cls(stage, n_microbatches=args.micro_batches, loss_fn=lm_loss)
    opt = torch.optim.SGD(model.parameters(), lr=LR)

    def step(x, y):
        if args.before_backward:  # a planted straggler (train.py --delay, --slow): before the whole pipeline step
            args.before_backward()
        if me == 0:
            schedule.step(x)
        elif me == stages - 1:
            schedule.step(target=y, losses=[])
        else:
            schedule.step()
        if dp > 1:
            _allreduce_buckets(list(model.parameters()), groups["DP"])
        opt.step()
        opt.zero_grad(set_to_none=True)

    plan = {"scheme": "pp-dp" if dp > 1 else "pp", "dp": dp, "tp": 1, "pp": stages, "zero": 0,
            "sequence_parallel": False, "batch": args.micro_batch * args.micro_batches, "schedule": args.schedule}
    if dp > 1:
        plan["bucket_cap_mb"] = plan["first_bucket_mb"] = 25
    return step, plan, groups


def _allreduce_buckets(params, group, first_cap=25 * 2**20, cap=25 * 2**20):
    """Average gradients over ``group`` as DDP with bucket_cap_mb=25 does: parameters in reverse
    registration order, one flat allreduce per bucket, a bucket closed once it reaches its cap (given a
    cap, torch's DDP applies it to the first bucket too)."""
    from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

    grads, bucket, size, limit = [p.grad for p in reversed(params) if p.grad is not None], [], 0, first_cap
    for i, g in enumerate(grads):
        bucket.append(g)
        size += g.numel() * g.element_size()
        if size >= limit or i == len(grads) - 1:
            flat = _flatten_dense_tensors(bucket)
            dist.all_reduce(flat, group=group)
            flat /= dist.get_world_size(group)
            for g_, new in zip(bucket, _unflatten_dense_tensors(flat, bucket), strict=True):
                g_.copy_(new)
            bucket, size, limit = [], 0, cap


def build_scheme(args, cfg, world, device):
    name = args.parallel
    if name == "pp" and args.compile:
        raise SystemExit("--compile applies to the schemes that train one module: not pp")
    if name in ("tp-dp", "pp-dp") and world % 2:
        raise SystemExit(f"{name} needs an even number of ranks (4: 2 x dp 2)")
    return {
        "ddp": lambda: ddp(args, cfg, world, device),
        "zero1": lambda: ddp(args, cfg, world, device, zero=1),
        "zero2": lambda: fsdp(args, cfg, world, device, reshard=False),
        "fsdp": lambda: fsdp(args, cfg, world, device, reshard=True),
        "tp": lambda: tp(args, cfg, world, device),
        "tp-sp": lambda: tp(args, cfg, world, device, sequence_parallel=True),
        "pp": lambda: pp(args, cfg, world, device),
        "tp-dp": lambda: tp_dp(args, cfg, world, device),
        "pp-dp": lambda: pp(args, cfg, world, device, dp=2),
    }[name]()
