"""Ingest on a real Dask cluster (processes on 127.0.0.1 only) whose scheduler or workers fail: each fault
ends within TRACEKIT_DASK_WAIT_S (a few seconds here) in exit code 1 and one line saying what happened
and what to do, and the run that was there before stays, byte for byte."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import tracekit
from tests.cli.test_facts_and_dask import make_traces, tables
from tests.conftest import dist, live, write_trace
from tests.tracegen import kernel, step

WAIT_S = 3
pytestmark = pytest.mark.slow  # each starts Dask processes and waits WAIT_S for the fault to show


def _start_scheduler(d):
    sched_file = d / "scheduler.json"
    p = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port",
                          "0", "--no-dashboard", "--scheduler-file", str(sched_file)], cwd=d,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    for _ in range(300):
        if sched_file.exists() and sched_file.stat().st_size:
            return p, json.loads(sched_file.read_text())["address"]
        time.sleep(0.1)
    p.kill()
    pytest.fail("the Dask scheduler did not start in 30 s")


def _start_worker(d, address, name):
    # its own session: the nanny and the worker process it forks are killed together (killpg)
    return subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--host", "127.0.0.1",
                             "--nthreads", "1", "--nworkers", "1", "--no-dashboard", "--name", name,
                             "--local-directory", str(d / name)], cwd=d, start_new_session=True,
                            env={**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _kill(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait(timeout=30)


@pytest.fixture
def cluster(tmp_path):
    """Start processes on demand; every one is killed (with its children) at the end."""
    pytest.importorskip("distributed")
    procs = []

    class C:
        def scheduler(self):
            p, self.address = _start_scheduler(tmp_path)
            self.sched = p
            procs.append(p)
            return self.address

        def worker(self, name):
            p = _start_worker(tmp_path, self.address, name)
            procs.append(p)
            return p

    yield C()
    for p in procs:
        _kill(p)


@pytest.fixture(scope="module")
def big_traces(tmp_path_factory):
    return _big_traces(tmp_path_factory.mktemp("big") / "t")


def _big_traces(d, ranks=4, kernels=10_000):
    """Ranks whose parse takes about a second each, so a fault lands while their tasks run."""
    d.mkdir()
    for r in range(ranks):
        evs = [step(1, 0, 10 * kernels + 100)]
        for k in range(kernels):
            evs += kernel("gemm", 10 * k + 1, 5, launch=(10 * k, 1))
        write_trace(d / f"rank{r}.json", evs, header=dist(r, world=ranks))
    return d


def _previous_run(tmp_path):
    out = tmp_path / "run"
    tracekit.ingest([make_traces(tmp_path / "small")], out, jobs=1)
    return out, tables(out), ((live(out) / "manifest.json").read_text(), _versions(tmp_path))


def _versions(d):
    return sorted(os.listdir(d / "run" / "versions")) if (d / "run" / "versions").is_dir() else []


def _ingest(traces, out, address):
    env = {**os.environ, "TRACEKIT_DASK_WAIT_S": str(WAIT_S)}
    return subprocess.Popen([sys.executable, "-m", "tracekit.cli.main", "ingest", str(traces), "-o", str(out),
                             "--scheduler", address, "--force", "--no-progress"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _when_running(address, ingest):
    """Return once a tracekit task runs on some worker (the ingest is mid-way)."""
    from distributed import Client
    with Client(address, timeout="30s") as c:
        for _ in range(600):
            if any(k.startswith("tracekit-ingest") for keys in c.processing().values() for k in keys):
                return
            assert ingest.poll() is None, ingest.communicate()
            time.sleep(0.05)
    pytest.fail("no ingest task started in 30 s")


def _one_line_failure(ingest, *words):
    _, err = ingest.communicate(timeout=120)
    lines = err.strip().splitlines()
    assert ingest.returncode == 1, err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for w in words:
        assert w in lines[0], err
    return lines[0]


def _intact(out, before, manifest_and_versions):
    """The same manifest, the same rows, and no half-built version left in it."""
    manifest, versions = manifest_and_versions
    assert (live(out) / "manifest.json").read_text() == manifest
    assert tables(out) == before
    assert _versions(out.parent) == versions


def test_every_worker_killed_mid_ingest_ends_and_keeps_the_previous_run(tmp_path, cluster, big_traces):
    out, before, manifest = _previous_run(tmp_path)
    address = cluster.scheduler()
    w = cluster.worker("w0")
    ingest = _ingest(big_traces, out, address)
    _when_running(address, ingest)
    _kill(w)
    line = _one_line_failure(ingest, f"every worker of the Dask scheduler at {address} left mid-ingest",
                             f"none came back within {WAIT_S} s", "earlier run there stays intact",
                             f"dask worker {address}")
    assert "of 4 files done" in line
    _intact(out, before, manifest)


def test_no_worker_at_the_start_ends_and_keeps_the_previous_run(tmp_path, cluster):
    out, before, manifest = _previous_run(tmp_path)
    address = cluster.scheduler()
    ingest = _ingest(make_traces(tmp_path / "t"), out, address)
    line = _one_line_failure(ingest, f"the Dask scheduler at {address} has no workers (waited {WAIT_S} s)",
                             f"dask worker {address}", "--scheduler local")
    assert "Free space" not in line
    _intact(out, before, manifest)


def test_scheduler_killed_mid_ingest_ends_and_keeps_the_previous_run(tmp_path, cluster, big_traces):
    out, before, manifest = _previous_run(tmp_path)
    address = cluster.scheduler()
    cluster.worker("w0")
    ingest = _ingest(big_traces, out, address)
    _when_running(address, ingest)
    _kill(cluster.sched)
    line = _one_line_failure(ingest, f"lost the Dask scheduler at {address} mid-ingest", "earlier run there "
                             "stays intact", "restart it and its workers")
    assert "internal error" not in line
    _intact(out, before, manifest)
