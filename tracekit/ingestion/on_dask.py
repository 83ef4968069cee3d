"""Run ingest's map step (parse one file + derive its rank's facts) as tasks on a Dask cluster.

We only say what one task is; Dask's ``distributed`` scheduler places, runs and retries them. Workers
write their parts straight into the run's temporary directory, so it must sit on storage that every
worker sees (checked before any task runs); the reduce and the atomic swap stay on the client.
"""

from __future__ import annotations

import logging
import os
import time
import uuid

from .. import settings
from ..errors import TracekitError


def _one(batch):
    from distributed import get_worker

    from .task import run_batch

    return run_batch(batch), get_worker().address


def _client(scheduler: str, jobs: int, wait_s: float):
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise TracekitError("--scheduler needs Dask's distributed scheduler: pip install 'tracekit[dask]'") from None
    if scheduler == "local":
        cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=None)
        return Client(cluster), cluster
    try:
        return Client(scheduler, timeout=f"{min(20.0, wait_s)}s"), None
    except (OSError, TimeoutError, ValueError) as exc:
        raise TracekitError(f"cannot reach the Dask scheduler at {scheduler}: {exc}; start one with "
                            "`dask scheduler`, or use --scheduler local") from None


def _probe(path: str) -> bool:
    return os.path.isfile(path)


_KEPT = "the run was not replaced (an earlier run there stays intact)"


class _Lost(Exception):
    """The cluster went away: said once, as a TracekitError, by run_on_dask."""


def _ask(fn, *args, **kwargs):
    """A call to the scheduler; a broken connection (an OSError, a TimeoutError: also OSErrors, which the
    run writer would take for a full disk) is the cluster's fault, not the disk's."""
    try:
        return fn(*args, **kwargs)
    except TracekitError:
        raise
    except Exception as exc:  # noqa: BLE001 -- CommClosedError, TimeoutError, CancelledError, a closed client's KeyError ...
        raise _Lost(type(exc).__name__) from None


def _n_workers(client) -> int:
    return len(_ask(client.scheduler_info)["workers"])


def run_on_dask(tasks, jobs: int, tmp: str, done, prog, scheduler: str = "local") -> dict:
    """Submit every task (a batch of files: task.run_batch); call ``done(batch, outcome, worker)`` as
    each ends. Returns the executor's description for the manifest.

    Bounded however the cluster fails (TRACEKIT_DASK_WAIT_S, default 60 s): no worker at the start, every
    worker gone mid-ingest (Dask would keep the tasks pending for ever), or the scheduler gone (Dask
    cancels every task) each end in one TracekitError saying what happened and what to do; the caller
    then removes the half-built version, so the previous run stays."""
    wait_s = settings.dask_wait_s()
    poll = prog.poll
    client, cluster = _client(scheduler, jobs, wait_s)
    quiet = [  # (after distributed is imported: its loggers exist)
        logging.getLogger(n) for n in ["distributed", *logging.root.manager.loggerDict]
        if n.split(".")[0] in ("distributed", "tornado", "asyncio")]
    levels = [q.level for q in quiet]
    for q in quiet:  # their reconnect errors and tracebacks are said in our one line
        q.setLevel(logging.CRITICAL + 1)
    where = "the local Dask cluster" if cluster is not None else f"the Dask scheduler at {scheduler}"
    restart = "" if cluster is not None else f"start workers with `dask worker {scheduler}`, or "
    n_done, n_files = 0, sum(len(t) for t in tasks)
    lost = False
    try:
        try:
            workers = _n_workers(client)
            if not workers:
                try:
                    client.wait_for_workers(1, timeout=wait_s)
                except (TimeoutError, OSError):
                    raise TracekitError(f"{where} has no workers (waited {wait_s:g} s); {_KEPT}: {restart}use "
                                        "--scheduler local") from None
                workers = _n_workers(client)
            _check_shared(client, tmp)
            futures = {_ask(client.submit, _one, t, key=f"tracekit-ingest-{i}-{uuid.uuid4().hex[:8]}",
                            pure=False): t for i, t in enumerate(tasks)}
            alone_since = None
            while futures:
                finished = _ended(futures, poll)
                for fut in finished:
                    task = futures.pop(fut)
                    if fut.status == "cancelled":
                        raise _Lost("it cancelled the tasks")  # what Dask does when the scheduler is gone
                    outcome, worker = _result(fut)
                    done(task, outcome, worker)
                    n_done += len(task)
                if client.status not in ("running", "newly-created"):
                    raise _Lost(f"client {client.status}")
                if futures and not finished:
                    if _n_workers(client):
                        alone_since = None
                    elif alone_since is None:
                        alone_since = time.monotonic()
                    elif time.monotonic() - alone_since > wait_s:
                        raise TracekitError(
                            f"every worker of {where} left mid-ingest ({n_done} of {n_files} files done) and "
                            f"none came back within {wait_s:g} s; {_KEPT}: {restart}use --scheduler local, "
                            "then ingest again")
        except _Lost as exc:
            lost = True
            raise TracekitError(f"lost {where} mid-ingest ({n_done} of {n_files} files done; {exc}); {_KEPT}: "
                                "restart it and its workers and ingest again, or use --scheduler local") from None
        return {"kind": "dask", "scheduler": "LocalCluster" if cluster else scheduler, "workers": workers}
    finally:
        try:
            client.close(timeout=5)
            if cluster is not None:
                cluster.close(timeout=5)
        except Exception:  # noqa: BLE001, S110 -- closing a client whose scheduler is gone: said already
            pass
        if not lost:  # a lost client's thread goes on logging its reconnect attempts: said already
            for q, level in zip(quiet, levels, strict=True):
                q.setLevel(level)


def _check_shared(client, tmp: str) -> None:
    probe = os.path.join(tmp, f".probe-{uuid.uuid4().hex}")
    open(probe, "w").close()
    blind = sorted(w for w, seen in _ask(client.run, _probe, probe).items() if not seen)
    os.remove(probe)
    if blind:
        raise TracekitError(f"Dask workers {', '.join(blind)} cannot see {tmp}: the run is written by the "
                            "workers, so -o must be on storage that every worker shares (NFS, Lustre, ...)")


def _ended(futures, poll, step: float = 0.5) -> list:
    """The futures that ended within ``step`` seconds (none when the wait timed out)."""
    from distributed import wait

    poll()
    try:
        ended, _ = wait(list(futures), timeout=step, return_when="FIRST_COMPLETED")
    except TimeoutError:
        return []
    except Exception as exc:  # noqa: BLE001 -- FuturesCancelledError (the connection is gone), CommClosedError ...
        raise _Lost(type(exc).__name__) from None
    return list(ended)


def _result(fut):
    """A task's value; the task's own error (its input's fault, or the disk's) passes through as raised."""
    from asyncio import CancelledError as Cancelled
    from concurrent.futures import CancelledError

    try:
        return fut.result()
    except (CancelledError, Cancelled):
        raise _Lost("it cancelled the tasks") from None
