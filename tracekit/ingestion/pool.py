"""Run ingest's tasks on this machine: in this process (one job) or a process pool of ``jobs`` workers.
The other executor, for a cluster, is on_dask.py; both have the same signature."""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

from .progress import worker_init
from .task import run_batch

STOP_S = 5.0  # how long workers get to end after a failure before they are killed


def run_in_pool(batches, jobs: int, tmp: str, done, prog, scheduler=None) -> dict:
    """Run every batch of files (task.run_batch); call ``done(batch, outcome)`` as each ends. Returns the
    executor's description for the manifest."""
    executor = {"kind": "process pool", "jobs": jobs}
    if jobs == 1:
        worker_init(prog.queue)
        for batch in batches:
            done(batch, run_batch(batch))
            prog.poll()
        return executor
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=worker_init, initargs=(prog.queue,))
    try:
        pending = {pool.submit(run_batch, b): b for b in batches}
        while pending:
            finished, _ = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            prog.poll()
            for fut in finished:
                batch = pending.pop(fut)
                exc = fut.exception()
                if exc is not None:
                    raise exc
                done(batch, fut.result())
    except BaseException:
        _close(pool, prog, kill=True)  # a worker still busy (or stuck on a full disk) must not hold the lock
        raise
    _close(pool, prog, kill=False)
    return executor


def _close(pool: ProcessPoolExecutor, prog, kill: bool) -> None:
    """Shut the pool down in bounded time: after a failure its workers are terminated at once (what they
    wrote is in the version being discarded); idle ones are let go, and killed if they do not end within
    STOP_S. Progress updates are drained meanwhile: a worker that exits with updates still queued waits
    for them to be read."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    if kill:
        for p in procs:
            p.terminate()
    deadline = time.monotonic() + STOP_S
    for p in procs:
        while p.is_alive() and time.monotonic() < deadline:
            prog.poll()
            p.join(0.05)
        if p.is_alive():
            p.kill()
            p.join(1.0)
