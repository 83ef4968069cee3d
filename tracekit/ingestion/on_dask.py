"""Run ingest's map step (parse one file + derive its rank's facts) as tasks on a Dask cluster.

We only say what one task is; Dask's ``distributed`` scheduler places, runs and retries them. Workers
write their parts straight into the run's temporary directory, so it must sit on storage that every
worker sees (checked before any task runs); the reduce and the atomic swap stay on the client.
"""

from __future__ import annotations

import os
import uuid

from ..errors import TracekitError


def _one(batch):
    from distributed import get_worker

    from .run_writer import _batch_task

    return _batch_task(batch), get_worker().address


def _client(scheduler: str, jobs: int):
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise TracekitError("--scheduler needs Dask's distributed scheduler: pip install 'tracekit[dask]'") from None
    if scheduler == "local":
        cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=None)
        return Client(cluster), cluster
    try:
        return Client(scheduler, timeout="20s"), None
    except (OSError, TimeoutError, ValueError) as exc:
        raise TracekitError(f"cannot reach the Dask scheduler at {scheduler}: {exc}; start one with "
                            "`dask scheduler`, or use --scheduler local") from None


def _probe(path: str) -> bool:
    return os.path.isfile(path)


def run_on_dask(tasks, scheduler: str, jobs: int, tmp: str, done, poll) -> dict:
    """Submit every task (a batch of files: run_writer._batch_task); call ``done(batch, outcome, worker)`` as
    each ends. Returns the executor's description for the manifest."""
    client, cluster = _client(scheduler, jobs)
    try:
        workers = list(client.scheduler_info()["workers"])
        if not workers:
            client.wait_for_workers(1, timeout=60)
            workers = list(client.scheduler_info()["workers"])
        probe = os.path.join(tmp, f".probe-{uuid.uuid4().hex}")
        open(probe, "w").close()
        blind = sorted(w for w, seen in client.run(_probe, probe).items() if not seen)
        os.remove(probe)
        if blind:
            raise TracekitError(f"Dask workers {', '.join(blind)} cannot see {tmp}: the run is written by the "
                                "workers, so -o must be on storage that every worker shares (NFS, Lustre, ...)")
        from distributed import as_completed

        futures = {client.submit(_one, t, key=f"tracekit-ingest-{i}-{uuid.uuid4().hex[:8]}", pure=False): t
                   for i, t in enumerate(tasks)}
        for fut in as_completed(futures):
            outcome, worker = fut.result()
            done(futures[fut], outcome, worker)
            poll()
        return {"kind": "dask", "scheduler": "LocalCluster" if cluster else scheduler, "workers": len(workers)}
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
