"""The timeline's track of the critical path: on each rank, a slice per run of the path's pieces there
(cause: name), on the replay's times (the measured ones wherever the replay gives them back: see
`tracekit report RUN replay`)."""

from __future__ import annotations

import json

from ..errors import TracekitError


def critical_track(run, put, ev, tid: int, ranks: list[int], steps: tuple[int, int] | None) -> int:
    """Write the track's events through ``put`` (``ev``: the timeline's event formatter); returns how many."""
    from .critical import runs
    from .from_run import path_replay

    if not run.sql("SELECT 1 FROM steps LIMIT 1").num_rows:
        return 0
    try:
        r = path_replay(run)
    except TracekitError:  # no graph to walk: the timeline goes on without the track
        return 0
    shown = set(ranks)
    n = 0
    named = set()
    for step, _lo, a, b, rank, cause, name in runs(r):
        if rank not in shown or (steps is not None and not steps[0] <= step <= steps[1]):
            continue
        if rank not in named:
            put(json.dumps({"ph": "M", "name": "thread_name", "pid": rank, "tid": tid,
                            "args": {"name": "tracekit: critical path"}}))
            named.add(rank)
        put(ev("X", f"{cause}: {name}", rank, tid, a, b - a, cat="tracekit-critical", args={"step": step}))
        n += 1
    return n
