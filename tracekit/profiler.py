"""Profiler glue: an ``on_trace_ready`` handler that writes one trace per rank and iteration, and a
helper that records the training configuration in the trace so that ``tracekit validate`` reads it.

    from tracekit.profiler import trace_handler, record_config
    with torch.profiler.profile(schedule=..., on_trace_ready=trace_handler("traces/")) as prof:
        record_config(prof, {"model": {...}, "plan": {...}})
        ...

torch is imported lazily: importing tracekit never imports torch.
"""

from __future__ import annotations

import json
import os

from .discover import TRACE_PATH_TEMPLATE

CONFIG_KEY = "tracekit_config"
MARKER_BASE = 7919  # marker allreduces have 7919, 7920, ... elements: sizes a model rarely sends
MARKERS_PER_GROUP = 8  # at once, so that every Gloo worker thread of the group takes at least one


def _rank() -> int:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def trace_path(trace_dir: str, step: int, rank: int) -> str:
    return os.path.join(trace_dir, TRACE_PATH_TEMPLATE.format(step=step, rank=rank))


def trace_handler(trace_dir: str, ingest_to: str | None = None):
    """An on_trace_ready callback: writes DIR/iteration_{step}/rank{rank}_trace.json.gz.

    With ``ingest_to``, rank 0 ingests the iteration's directory into that run directory once every
    rank's file is there (it waits on a barrier when a process group is up).
    """

    def handler(prof) -> None:
        step = getattr(prof, "step_num", 0)
        rank = _rank()
        path = trace_path(trace_dir, step, rank)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        prof.export_chrome_trace(path)
        if ingest_to is not None:
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                dist.barrier()
            if rank == 0:
                from .api import ingest

                ingest([os.path.dirname(path)], ingest_to, jobs=1, progress=False)

    return handler


def record_config(prof, config: dict) -> None:
    """Store ``config`` (model dims, batch, sequence, dtype, parallelism plan) in the trace's metadata."""
    prof.add_metadata_json(CONFIG_KEY, json.dumps(config, sort_keys=True))


def mark_process_groups(groups) -> dict[str, str]:
    """Tie Gloo worker threads to their process groups, for traces recorded on CPU.

    Gloo ops in a trace do not name their process group, but each group runs its ops on worker threads
    of its own. Call this inside the profiled region (in a step that is recorded) with the groups the
    training uses (``{role: ProcessGroup}`` or a list); it runs, per group, ``MARKERS_PER_GROUP``
    allreduces of a distinctive element count (``MARKER_BASE`` + i) and returns ``{count: group name}``.
    Put that under ``"markers"`` in the config given to :func:`record_config`: the ``collectives``
    view then gives every Gloo op the group of its thread, and flags the marker allreduces
    (``tracekit_marker``) so that ``tracekit validate`` leaves them out. No other collective is dropped
    or changed. Does nothing on NCCL groups (their kernels name the group) and returns ``{}`` there.
    """
    import torch
    import torch.distributed as dist

    groups = list(groups.values()) if isinstance(groups, dict) else list(groups)
    by_name = {dist._get_process_group_name(g): g for g in groups}
    if not by_name or any(dist.get_backend(g) != "gloo" for g in by_name.values()):
        return {}
    markers = {str(MARKER_BASE + i): name for i, name in enumerate(by_name)}
    for numel, name in markers.items():
        works = [dist.all_reduce(torch.zeros(int(numel)), group=by_name[name], async_op=True)
                 for _ in range(MARKERS_PER_GROUP)]
        for w in works:
            w.wait()
    return markers


def read_config(metadata: dict) -> dict | None:
    """The recorded config from a trace's top-level metadata (as stored in traces.metadata)."""
    value = metadata.get(CONFIG_KEY)
    if value is None:
        return None
    return json.loads(value) if isinstance(value, str) else value
