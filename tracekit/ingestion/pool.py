"""Run ingest's tasks on this machine: in this process (one job) or a process pool of ``jobs`` workers.
The other executor, for a cluster, is on_dask.py; both have the same signature."""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

from .progress import worker_init
from .task import run_batch


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
    with ProcessPoolExecutor(max_workers=jobs, initializer=worker_init, initargs=(prog.queue,)) as pool:
        pending = {pool.submit(run_batch, b): b for b in batches}
        try:
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
            for fut in pending:
                fut.cancel()
            raise
    return executor
