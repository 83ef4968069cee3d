"""Per-rank facts written at ingest, re-derived for older runs, and ingest through a real Dask cluster
(a `dask scheduler` and two `dask worker` processes on 127.0.0.1) giving the same run as a local ingest."""

import json
import os
import shutil
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

import tracekit
from tests.conftest import dist, live, write_trace
from tests.tracegen import kernel, step
from tracekit.rules import FACTS


def make_traces(d, ranks=4):
    d.mkdir()
    for r in range(ranks):
        evs = [step(1, 0, 500)]
        evs += kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 10 + r, 20, launch=(9 + r, 1),
                      **{"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024,
                         "dtype": "Float", "Group size": ranks, "Process Group Name": "0", "Seq": 1})
        evs += kernel("gemm", 0, 15, launch=(0, 1))
        write_trace(d / f"rank{r}.json", evs, header=dist(r, world=ranks))
    return d


def tables(run_dir):
    """Every Parquet file of a run's live version (events and facts), as sorted rows."""
    out = {}
    run_dir = live(run_dir)
    for root, _dirs, files in os.walk(run_dir):
        for f in files:
            if f.endswith(".parquet"):
                rel = os.path.relpath(os.path.join(root, f), run_dir)
                t = pq.read_table(os.path.join(root, f))
                out[rel] = sorted(json.dumps(r, sort_keys=True, default=str) for r in t.to_pylist())
    return out


def test_facts_are_written_per_rank_and_read_back(tmp_path):
    run = tracekit.ingest([make_traces(tmp_path / "t")], tmp_path / "run", jobs=2)
    for name in FACTS:  # derived per rank, then compacted into one file by the reduce step
        t = pq.read_table(live(tmp_path / "run") / "facts" / name / "all.parquet")
        assert os.listdir(live(tmp_path / "run") / "facts" / name) == ["all.parquet"]
        # comm_like_kernels has rows only on ranks that run no known comm kernel, _gloo_collectives only on
        # ranks without GPU kernels: none here
        assert name in ("comm_ops", "_comm_exposure", "comm_like_kernels", "_gloo_collectives") or \
            set(t.column("rank").to_pylist()) == {0, 1, 2, 3}, name
    # a fact read back: rank r's allreduce starts at 10 + r us, and the matching sees rank 3 last
    got = run.sql("SELECT rank, ts_ns FROM collectives ORDER BY rank").to_pylist()
    assert got == [{"rank": r, "ts_ns": (10 + r) * 1000} for r in range(4)]
    (i,) = run.sql("SELECT last_rank, start_skew_ns, status FROM collective_instances").to_pylist()
    assert i == {"last_rank": 3, "start_skew_ns": 3000, "status": "clean"}


def _make_stale(run_dir):
    """The run as an older tracekit wrote it: no facts, no key of the rules."""
    shutil.rmtree(live(run_dir) / "facts")
    m = json.loads((live(run_dir) / "manifest.json").read_text())
    del m["facts_key"]
    (live(run_dir) / "manifest.json").write_text(json.dumps(m))


def _snapshot(d):
    """Every file and directory under d with its size and modification time."""
    out = {}
    for root, dirs, files in os.walk(d):
        for f in dirs + files:
            st = os.lstat(os.path.join(root, f))
            out[os.path.relpath(os.path.join(root, f), d)] = (st.st_size, st.st_mtime_ns)
    return out


def test_a_run_from_older_rules_refuses_to_open_and_says_how(tmp_path):
    tracekit.ingest([make_traces(tmp_path / "t")], tmp_path / "run", jobs=1)
    _make_stale(tmp_path / "run")
    before = _snapshot(tmp_path)
    r = subprocess.run([sys.executable, "-m", "tracekit.cli.main", "report", str(tmp_path / "run"), "summary"],
                       capture_output=True, text=True)
    assert r.returncode == 4  # RunError: the run, not the input
    assert r.stderr.count("\n") == 1 and f"tracekit ingest --rederive {tmp_path / 'run'}" in r.stderr
    assert _snapshot(tmp_path) == before  # opening wrote nothing: no facts derived in place, no lock taken


def test_rederive_builds_a_new_version_under_the_lock_and_switches_to_it(tmp_path):
    import fcntl

    tracekit.ingest([make_traces(tmp_path / "t")], tmp_path / "run", jobs=1)
    before = tables(tmp_path / "run")
    _make_stale(tmp_path / "run")
    shutil.rmtree(tmp_path / "t")  # the traces are not needed
    old = str(live(tmp_path / "run"))
    with open(tmp_path / "run" / "writer.lock", "a+") as held:  # an ingest writing the run holds its lock
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(tracekit.TracekitError, match="another tracekit ingest is writing"):
            tracekit.rederive(tmp_path / "run")
    assert str(live(tmp_path / "run")) == old and not (live(tmp_path / "run") / "facts").exists()
    from tracekit.layout.versions import hold_for_reading

    fd = hold_for_reading(old)  # a reader on the old version (its shared lock, as a Run holds)
    try:
        run = tracekit.rederive(tmp_path / "run")
        assert str(live(tmp_path / "run")) != old  # a new version, switched in by CURRENT
        assert os.path.isdir(old) and not os.path.exists(os.path.join(old, "facts"))  # the reader keeps it
    finally:
        os.close(fd)
    assert tables(tmp_path / "run") == before
    assert run.sql("SELECT count(*) AS n FROM collectives").to_pylist() == [{"n": 4}]  # one allreduce per rank


def test_a_read_only_run_of_current_rules_opens(tmp_path):
    tracekit.ingest([make_traces(tmp_path / "t")], tmp_path / "run", jobs=1)
    run_dir = tmp_path / "run"
    dirs = [tmp_path] + [os.path.join(r, d) for r, ds, _ in os.walk(run_dir) for d in ds] + [run_dir]
    for d in dirs:
        os.chmod(d, 0o555)
    try:
        before = _snapshot(tmp_path)
        with tracekit.open(tmp_path / "run") as run:
            # rank r's allreduce starts at 10 + r us (make_traces)
            got = run.sql("SELECT rank, ts_ns FROM collectives ORDER BY rank").to_pylist()
        assert got == [{"rank": r, "ts_ns": (10 + r) * 1000} for r in range(4)]
        assert _snapshot(tmp_path) == before
    finally:
        for d in dirs:
            os.chmod(d, 0o755)


def test_rederive_on_request(tmp_path):
    tracekit.ingest([make_traces(tmp_path / "t")], tmp_path / "run", jobs=1)
    before = tables(tmp_path / "run")
    r = subprocess.run([sys.executable, "-m", "tracekit.cli.main", "ingest", "--rederive", str(tmp_path / "run")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "facts derived again" in r.stdout
    assert tables(tmp_path / "run") == before


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """A real scheduler and two single-threaded workers, each its own process, on 127.0.0.1 only."""
    pytest.importorskip("distributed")
    d = tmp_path_factory.mktemp("dask")
    sched_file = d / "scheduler.json"
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", "0", "--no-dashboard", "--scheduler-file", str(sched_file)],
                              cwd=d, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        for _ in range(300):
            if sched_file.exists() and sched_file.stat().st_size:
                break
            time.sleep(0.1)
        address = json.loads(sched_file.read_text())["address"]
        for i in range(2):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", address, "--host", "127.0.0.1",
                 "--nthreads", "1", "--nworkers", "1", "--no-dashboard", "--name", f"w{i}",
                 "--local-directory", str(d / f"w{i}")], cwd=d, env=env,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client
        with Client(address, timeout="30s") as c:
            c.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for p in procs[::-1]:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.mark.slow  # starts a Dask cluster
def test_ingest_on_a_dask_cluster_equals_a_local_ingest(tmp_path, dask_cluster):
    traces = make_traces(tmp_path / "t")
    tracekit.ingest([traces], tmp_path / "local", jobs=1)
    r = subprocess.run([sys.executable, "-m", "tracekit.cli.main", "ingest", str(traces), "-o",
                        str(tmp_path / "dask"), "--scheduler", dask_cluster], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert tables(tmp_path / "dask") == tables(tmp_path / "local")
    m = json.loads((live(tmp_path / "dask") / "manifest.json").read_text())
    assert {k: m["executor"][k] for k in ("kind", "scheduler", "workers", "batches")} == {
        "kind": "dask", "scheduler": dask_cluster, "workers": 2, "batches": 4}  # 4 files, 2 workers: one file a batch
    assert set(m["executor"]["timings"]) == {"map_s", "cross_rank_s", "align_s", "compact_s", "finish_s"}
    assert {i["worker"] for i in m["inputs"]} <= set(_workers(dask_cluster))
    local = json.loads((live(tmp_path / "local") / "manifest.json").read_text())
    assert {k: v for k, v in local["executor"].items() if k != "timings"} == {
        "kind": "process pool", "jobs": 1, "facts": "whole run", "cores": 1, "batches": 4}


def _workers(address):
    from distributed import Client
    with Client(address, timeout="30s") as c:
        return list(c.scheduler_info()["workers"])


@pytest.mark.slow  # waits for the connection to time out
def test_unreachable_scheduler_is_a_clear_error(tmp_path):
    r = subprocess.run([sys.executable, "-m", "tracekit.cli.main", "ingest", str(make_traces(tmp_path / "t")),
                        "-o", str(tmp_path / "run"), "--scheduler", "tcp://127.0.0.1:9"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.slow  # real traces, ingested twice
@pytest.mark.parametrize("traces", ["param_dlrm_kineto_8rank", "hta_trace_filter_2rank"])
def test_whole_run_facts_equal_per_rank_facts_on_real_traces(tmp_path, monkeypatch, traces):
    """A run of small files derives its facts once for all ranks (derive_run); a larger one rank by rank.
    The rules partition by rank, so both must give the same rows: checked on real multi-rank traces."""
    from tests.conftest import shared_traces
    from tracekit.ingestion import run_writer

    src = shared_traces() / traces
    whole = tracekit.ingest([src], tmp_path / "whole", jobs=2)
    monkeypatch.setattr(run_writer, "SMALL_RUN_BYTES", 0)
    per_rank = tracekit.ingest([src], tmp_path / "per_rank", jobs=1)
    assert whole.manifest["executor"]["facts"] == "whole run" and per_rank.manifest["executor"]["facts"] == "per rank"
    a, b = tables(tmp_path / "whole"), tables(tmp_path / "per_rank")
    assert a.keys() == b.keys() and any(k.startswith("facts") for k in a)
    for key in a:
        assert a[key] == b[key], key


@pytest.mark.slow
def test_facts_compacted_in_rank_partitions_read_back_whole(tmp_path, monkeypatch):
    """The reduce step joins rank files into partitions of RANKS_PER_FILE ranks (here 2): four ranks make
    two files per fact, ranks 0-1 and 2-3, and a query sees every rank's rows once, as from one file."""
    from tracekit import compact
    from tracekit.ingestion import run_writer

    monkeypatch.setattr(run_writer, "SMALL_RUN_BYTES", 0)  # facts per rank, as a large run derives them
    one = tracekit.ingest([make_traces(tmp_path / "t")], tmp_path / "one", jobs=2)
    monkeypatch.setattr(compact, "RANKS_PER_FILE", 2)
    two = tracekit.ingest([tmp_path / "t"], tmp_path / "two", jobs=2)
    for name in FACTS:
        assert sorted(os.listdir(live(tmp_path / "two") / "facts" / name)) == [
            "ranks-0000000-0000001.parquet", "ranks-0000002-0000003.parquet"], name
        q = f"SELECT * FROM {name}"
        assert sorted(map(str, two.sql(q).to_pylist())) == sorted(map(str, one.sql(q).to_pylist())), name
    # the rows of each partition are its ranks'
    t = pq.read_table(live(tmp_path / "two") / "facts" / "gpu_kernels" / "ranks-0000002-0000003.parquet")
    assert set(t.column("rank").to_pylist()) == {2, 3}


def test_a_bad_file_in_a_batch_is_skipped_alone(tmp_path, monkeypatch):
    """Six small files on one job: batches of three (run_writer.batches) whose facts are derived together;
    with --on-error skip a broken file is listed and the other five ranks, its batch-mates too, are whole."""
    from tracekit.ingestion import run_writer

    monkeypatch.setattr(run_writer, "SMALL_RUN_BYTES", 0)  # facts per rank (per batch), as a large run derives them
    d = make_traces(tmp_path / "t", ranks=6)
    (d / "rank4.json").write_text('{"traceEvents": [{"ph": "X", "ts": "soon"}]}')
    run = tracekit.ingest([d], tmp_path / "run", jobs=1, on_error="skip")
    m = json.loads((live(tmp_path / "run") / "manifest.json").read_text())
    assert m["executor"]["batches"] == 2 and [os.path.basename(f["path"]) for f in m["failures"]] == ["rank4.json"]
    got = run.sql("SELECT rank, count(*) AS n FROM collectives GROUP BY rank ORDER BY rank").to_pylist()
    assert got == [{"rank": r, "n": 1} for r in (0, 1, 2, 3, 5)]
