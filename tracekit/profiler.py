"""Profiler glue: an ``on_trace_ready`` handler that writes one trace per rank and iteration, and a
helper that records the training configuration in the trace so that ``tracekit validate`` reads it.

    from tracekit.profiler import trace_handler, record_config
    with torch.profiler.profile(schedule=..., on_trace_ready=trace_handler("traces/", run="run/")) as prof:
        record_config(prof, {"model": {"layers": 2, ...}, "plan": {"dp": 2}})   # any time
        ...
    # run="run/": each rank makes its part of run/ beside the training; then `tracekit ingest --reduce run/`

The config (checked by :func:`check_config`, which names a wrong key):

- ``model``: the fields of :class:`tracekit.analytic.GPTShape` (layers, hidden, heads, vocab, seq,
  micro_batch; optional micro_batches, dtype, tied_head, fused_qkv, experts, top_k);
- ``plan``: the fields of :class:`tracekit.analytic.Plan` (dp, tp, pp, zero, sequence_parallel, backend,
  bucket_cap_mb, first_bucket_mb, ep), plus ``groups`` ({role: process group name}, roles DP, TP, PP,
  EP, which lets validate tell the groups apart), and the free labels ``scheme``, ``batch``,
  ``schedule`` and ``compile`` (the torch.compile backend);
- optional ``steps`` (profiled steps), ``world`` (world size) and ``gloo_threads`` (from
  :func:`gloo_threads`; ``markers`` in traces of older tracekit).

torch is imported lazily: importing tracekit never imports torch. See examples/quickstart.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import json
import os
import shutil
import socket

from .analytic.recorded import CONFIG_KEY
from .discover import TRACE_PATH_TEMPLATE
from .hosts import HOST_KEY

_PENDING: dict[int, dict] = {}  # id(profiler) -> the config record_config was given
# gloo_threads issues its allreduces at once, so that every Gloo worker thread of a group takes one:
# enough of them, each large enough (1 MB) to keep a thread busy while the next one wakes, and again
# (up to MAX_ROUNDS) when a loaded machine still ran them all on fewer threads
MARKER_NUMEL = 262144
MARKERS_PER_GROUP = 16
MAX_ROUNDS = 8


def _rank() -> int:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def trace_path(trace_dir: str, step: int, rank: int) -> str:
    return os.path.join(trace_dir, TRACE_PATH_TEMPLATE.format(step=step, rank=rank))


def trace_handler(trace_dir: str, ingest_to: str | None = None, run: str | None = None):
    """An on_trace_ready callback: writes DIR/iteration_{step}/rank{rank}_trace.json.gz.

    With ``run``, each rank then makes its own part of that run directory from its trace, in a process of
    its own (python -m tracekit.ingestion.rank_part, at the lowest priority) while training goes on: its
    events and per-rank facts, complete or absent. That process begins its work once the cores it may run
    on have a core's worth of idle time (at once where the ranks leave cores idle) or, at the latest, when
    this process calls wait_for_parts or exits (tracekit/ingestion/part_gate.py): a part beside ranks
    that keep every core busy would slow their steps. ``tracekit ingest --reduce RUN`` builds the run from the
    parts present (the cross-rank work only). Each profiling cycle is a part of its own
    (RUN/parts/iteration_S/rank-R); a run is one cycle (``--reduce --iteration S`` picks one), or give each
    cycle a run of its own with ``{step}`` in RUN (``run="runs/job-{step}"``). Before the
    training process exits it waits for its parts (wait_for_parts), so a reduce after the job sees them.

    With ``ingest_to``, rank 0 ingests the iteration's directory into that run directory once every
    rank's file is there (it waits on a barrier when a process group is up).
    """
    if run is not None:
        from .layout.objstore import Store, is_store_url
        from .layout.paths import refuse_url

        if is_store_url(run):  # at once: its bucket and credentials, not in the part's process after a cycle
            Store(run.replace("{step}", "0")).check()
        else:
            refuse_url(run)  # at once, not in the part's process after the first cycle

    def handler(prof) -> None:
        step = getattr(prof, "step_num", 0)
        rank = _rank()
        path = trace_path(trace_dir, step, rank)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        config = _PENDING.get(id(prof))
        import torch

        keys = {HOST_KEY: socket.gethostname(),  # which ranks share a host (tracekit.hosts)
                "pytorch_version": torch.__version__}  # Kineto does not write it (tracekit report RUN identity)
        if config is not None:
            keys[CONFIG_KEY] = config
        _export_with(prof, path, keys)
        if run is not None:
            start_part(path, run.replace("{step}", str(step)), step)  # runs/job-{step}: a run per cycle
        if ingest_to is not None:
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                dist.barrier()
            if rank == 0:
                import tracekit

                tracekit.ingest([os.path.dirname(path)], ingest_to, jobs=1, progress=False)

    return handler


_PARTS: list = []  # the rank-part processes this process started (subprocess.Popen), for wait_for_parts
PART_NICE = 19  # the lowest priority: the part waits for whatever CPU the training leaves
_FORK_HOOK: list = []  # [True] once _drop_pipes is registered to run in forked children


def start_part(trace: str, run: str, iteration: int | None = None):
    """Make ``trace``'s rank part of ``run`` in a process of its own (returns its Popen at once)."""
    import atexit
    import subprocess
    import sys

    for p in _PARTS:  # the parts of earlier cycles that finished: reaped (no zombie), their pipes closed
        if p.poll() is not None:
            _release(p)
    if not _PARTS:
        atexit.register(wait_for_parts)
    if not _FORK_HOOK and hasattr(os, "register_at_fork"):  # once: a child forked later (a DataLoader worker)
        os.register_at_fork(after_in_child=_drop_pipes)  # keeps no part's pipe open after the release
        _FORK_HOOK.append(True)
    from .layout.objstore import is_store_url

    where = run if is_store_url(run) else os.path.abspath(run)
    # the gate first, in an interpreter without site-packages (5 ms of CPU beside the training, not the
    # part's 50): it execs the part once a core is spare or the pipe closes (part_gate.py)
    gate = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ingestion", "part_gate.py")
    cmd = [sys.executable, "-S", gate, sys.executable, "-m", "tracekit.ingestion.rank_part", os.path.abspath(trace),
           where, "--nice", str(PART_NICE)]
    if iteration is not None:
        cmd += ["--iteration", str(iteration)]
    # its own session: a Ctrl-C or a launcher's signal to the training's group does not cut the part short
    # (it would leave none: a part is renamed into place whole); its errors go to the training's stderr
    # the same tracekit as this process's (not another one the child's sys.path would find first)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p))
    # its stdin a pipe this process holds: the part begins once the machine has a core to spare, or when
    # wait_for_parts (or this process's end) closes the pipe (tracekit/ingestion/part_gate.py)
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True,
                            env=env)
    _PARTS.append(proc)
    return proc


def _release(p) -> None:
    """Close this process's end of part ``p``'s pipe: the part, if it still waits, begins (part_gate.py)."""
    if p.stdin is not None and not p.stdin.closed:
        with contextlib.suppress(OSError):
            p.stdin.close()


def _drop_pipes() -> None:
    """In a forked child: close its copies of the parts' pipes and forget the parts (they are the parent's:
    a copy left open would keep a part waiting after wait_for_parts closed the parent's)."""
    for p in _PARTS:
        _release(p)
    _PARTS.clear()


def wait_for_parts(timeout: float | None = None) -> list[int]:
    """Wait for the rank parts this process started (trace_handler(..., run=RUN)); their exit codes (0:
    made). Runs at exit too, so that a reduce after the job finds every part."""
    for p in _PARTS:  # a part still waiting for a core to spare begins now (part_gate.py)
        _release(p)
    codes = [p.wait(timeout) for p in _PARTS]
    _PARTS.clear()
    return codes


def _export_with(prof, path: str, keys: dict) -> None:
    """Export the trace with extra top-level keys. Kineto drops metadata added outside the active
    steps, so the keys are written into the exported JSON here, right after its opening brace, without
    parsing the (possibly huge) rest."""
    plain = path[:-3] + ".tmp" if path.endswith(".gz") else path + ".tmp"
    prof.export_chrome_trace(plain)
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with open(plain, "rb") as src, opener(path, "wb") as dst:
            head = src.read(4096).lstrip()
            if not head.startswith(b"{"):
                raise ValueError(f"{plain}: the exported trace does not start with an object")
            dst.write(b"{" + b"".join(json.dumps(k).encode() + b": " + json.dumps(v, sort_keys=True).encode() + b", "
                                      for k, v in keys.items()))
            dst.write(head[1:])
            shutil.copyfileobj(src, dst, 1 << 22)
    finally:
        os.remove(plain)


def check_config(config: dict) -> dict:
    """The config as record_config stores it, checked: a clear TracekitError names a wrong key or value."""
    from .analytic.config import GPTShape, Plan
    from .errors import TracekitError

    if not isinstance(config, dict):
        raise TracekitError(f"record_config: the config must be a dict, not {type(config).__name__}")
    top = {"model", "plan", "steps", "world", "gloo_threads", "markers"}
    for k in config:
        if k not in top:
            raise TracekitError(f"record_config: unknown key {k!r}; the config takes {', '.join(sorted(top))}")
    plan_extra = {"groups", "scheme", "batch", "schedule", "compile"}
    for part, cls, extra in (("model", GPTShape, set()), ("plan", Plan, plan_extra)):
        given = config.get(part)
        if not isinstance(given, dict):
            raise TracekitError(f"record_config: the config needs a {part!r} dict "
                                f"(fields: {', '.join(f.name for f in dataclasses.fields(cls))})")
        known = {f.name for f in dataclasses.fields(cls)} | extra
        for k in given:
            if k not in known:
                raise TracekitError(f"record_config: {part}.{k} is not a field; {part} takes "
                                    f"{', '.join(sorted(known))}")
    from .analytic.config import from_recorded
    from_recorded(config)  # types and ranges (a missing field, heads not dividing hidden, ...)
    try:
        json.dumps(config)
    except TypeError as exc:
        raise TracekitError(f"record_config: the config must be plain JSON data ({exc})") from None
    return config


def record_config(prof, config: dict) -> None:
    """Record ``config`` (model dims, batch, sequence, dtype, parallelism plan) in the traces that
    :func:`trace_handler` writes for ``prof``. Call it at any time while the profiler is open (before the
    first step too); it is checked at once (:func:`check_config`)."""
    _PENDING[id(prof)] = check_config(config)


def gloo_threads(groups) -> dict[str, str]:
    """Which Gloo worker threads serve which process group: ``{thread id: group name}``.

    Gloo ops in a trace name neither their process group nor record_param_comms (PyTorch 2.13), but
    each group runs its ops on worker threads of its own. Call this once BEFORE the profiler starts, with
    the groups the training uses (``{role: ProcessGroup}`` or a list, in the same order on every rank),
    and put the result under ``"gloo_threads"`` in the config given to :func:`record_config`: the
    ``collectives`` view then gives every Gloo op the group of its thread. It finds the threads by
    profiling, in a short session of its own, ``MARKERS_PER_GROUP`` asynchronous allreduces per group,
    again until every worker thread of the group ran one (the members of a group agree on when to stop);
    none of them is in the training's trace. Returns ``{}`` for NCCL groups (their kernels name the group).
    """
    import torch
    import torch.distributed as dist

    from .errors import TracekitError

    groups = list(groups.values()) if isinstance(groups, dict) else list(groups)
    by_name = {dist._get_process_group_name(g): g for g in groups}
    if not by_name or any(dist.get_backend(g) != "gloo" for g in by_name.values()):
        return {}
    if torch.autograd.profiler._is_profiler_enabled:
        raise TracekitError("gloo_threads: call it before the profiler starts (its allreduces would be "
                            "in the trace); see examples/gpt/train.py")
    found: dict[str, str] = {}
    for name, group in by_name.items():
        want = getattr(getattr(group._get_backend(torch.device("cpu")), "options", None), "_threads", 1)
        tids: set[int] = set()
        for _ in range(MAX_ROUNDS):
            tids |= _threads_running(group)
            done = torch.tensor([int(len(tids) >= want)])
            dist.all_reduce(done, op=dist.ReduceOp.MIN, group=group)
            if done.item():
                break
        else:
            raise TracekitError(f"gloo_threads: group {name} ran its allreduces on {len(tids)} of its "
                                f"{want} worker threads in {MAX_ROUNDS} rounds")
        found.update({str(t): name for t in sorted(tids)})
    return found


def _threads_running(group) -> set[int]:
    """The trace thread ids of the Gloo ops of one burst of allreduces on ``group``, profiled apart."""
    import tempfile

    import torch
    import torch.distributed as dist

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        works = [dist.all_reduce(torch.zeros(MARKER_NUMEL), group=group, async_op=True)
                 for _ in range(MARKERS_PER_GROUP)]
        for w in works:
            w.wait()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "threads.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    return {e["tid"] for e in events if e.get("name") == "gloo:all_reduce" and e.get("ph") == "X"}

