"""The run cache: reused while inputs are unchanged, capped with least-recently-used eviction,
listed and cleared from the CLI."""

import os
import time

import pytest

import tracekit
from tests.conftest import dist, write_trace
from tracekit.cli.main import main


def trace_dir(d, n_events):
    d.mkdir()
    write_trace(d / "rank0.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": i,
                                    "dur": 1} for i in range(n_events)], header=dist(0, world=1))
    return d


def test_cache_is_capped_least_recently_used_first(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "cache"))
    a, b, c = (trace_dir(tmp_path / n, 2000) for n in "abc")
    ra = tracekit.open(a)
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(ra.version) for f in fs)
    # room for two runs of this size, not three
    monkeypatch.setenv("TRACEKIT_CACHE_MAX_MB", str(2.5 * size / 1e6))
    time.sleep(0.05)
    rb = tracekit.open(b)
    rb.close()  # (a run still open is never evicted)
    time.sleep(0.05)
    assert tracekit.open(a).directory == ra.directory  # a used again: now b is the least recently used
    time.sleep(0.05)
    rc = tracekit.open(c)
    left = sorted(n for n in os.listdir(tmp_path / "cache") if n.startswith("run-"))
    assert left == sorted(os.path.basename(p) for p in (ra.directory, rc.directory))
    assert os.path.basename(rb.directory) not in left
    assert main(["cache", "list", "--format", "csv"]) == 0
    listed = capsys.readouterr().out
    assert ra.directory in listed and rc.directory in listed and rb.directory not in listed
    ra.close()
    rc.close()
    assert main(["cache", "clear"]) == 0
    assert "removed 2 cached runs" in capsys.readouterr().out
    assert [n for n in os.listdir(tmp_path / "cache") if not n.endswith(".lock")] == []  # locks stay
    assert a.exists() and b.exists()  # the traces are not touched


def test_run_repr_says_what_it_holds(tmp_path):
    run = tracekit.ingest([trace_dir(tmp_path / "t", 3)], tmp_path / "run", jobs=1)
    assert repr(run) == f"Run({str(tmp_path / 'run')!r}: 1 rank [0], 3 events, 1 input)"


def test_report_help_lists_the_reports(capsys):
    from tracekit.reports import REGISTRY
    assert main(["report", "--help"]) == 0
    out = capsys.readouterr().out
    lines = [line.strip() for line in out.splitlines()]
    for name, rep in REGISTRY.items():
        assert f"{name:12s} {rep.summary}" in lines


def _count_hashes(monkeypatch):
    from tracekit.ingestion import run_writer
    hashed = []
    real = run_writer.sha256_of
    monkeypatch.setattr(run_writer, "sha256_of", lambda p: hashed.append(p) or real(p))
    return hashed


def test_a_second_open_of_unchanged_inputs_reads_no_file(tmp_path, monkeypatch):
    from tracekit.ingestion import source
    monkeypatch.setattr(source, "RACY_NS", 0)  # the inputs were written just now: trust their stat anyway
    d = trace_dir(tmp_path / "t", 50)
    first = tracekit.open(d)
    hashed = _count_hashes(monkeypatch)
    assert tracekit.open(d).name == first.name
    assert hashed == []  # size, inode, mtime and ctime as recorded: no SHA-256 of the input


def test_a_file_changed_to_the_same_size_is_ingested_again(tmp_path, monkeypatch):
    from tracekit.ingestion import source
    monkeypatch.setattr(source, "RACY_NS", 0)
    d = trace_dir(tmp_path / "t", 50)
    trace = d / "rank0.json"
    assert tracekit.open(d).sql("SELECT count(*) AS n FROM events WHERE name = 'k'").column("n").to_pylist() == [50]
    text = trace.read_bytes()
    st = os.stat(trace)
    trace.write_bytes(text.replace(b'"name": "k"', b'"name": "q"'))  # same size, other content
    os.utime(trace, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with its mtime put back (cp -p does)
    assert os.path.getsize(trace) == st.st_size
    hashed = _count_hashes(monkeypatch)
    run = tracekit.open(d)
    assert hashed == [str(trace)]  # the stat differs (ctime): hashed, and the hash differs
    assert run.sql("SELECT count(*) AS n FROM events WHERE name = 'q'").column("n").to_pylist() == [50]


def test_a_file_replaced_by_a_copy_is_hashed_not_ingested_again(tmp_path, monkeypatch):
    from tracekit.ingestion import source
    monkeypatch.setattr(source, "RACY_NS", 0)
    d = trace_dir(tmp_path / "t", 50)
    trace = d / "rank0.json"
    first = tracekit.open(d)
    (d / "copy").write_bytes(trace.read_bytes())
    os.replace(d / "copy", trace)  # a new inode, the same bytes
    hashed = _count_hashes(monkeypatch)
    again = tracekit.open(d)
    assert hashed == [str(trace)] and again.name == first.name


def test_a_file_changed_just_before_it_was_read_is_always_hashed(tmp_path, monkeypatch):
    # its stat cannot tell a second change within the same timestamp tick: it is not recorded
    from tracekit.ingestion import source
    monkeypatch.setattr(source, "RACY_NS", 3600 * 10**9)  # "just before": the last hour, however slow this machine
    d = trace_dir(tmp_path / "t", 50)
    tracekit.open(d)
    hashed = _count_hashes(monkeypatch)
    tracekit.open(d)
    assert hashed == [str(d / "rank0.json")]


def test_opening_a_cached_run_writes_nothing_into_it(tmp_path, monkeypatch):
    """Opening traces a second time (API and CLI) reads their cached run: its version directory stays byte
    for byte as it was, every file's time too (a '.last_used' file in it was rewritten on every open); the
    least-recently-used order lives beside the run (test_cache_is_capped_least_recently_used_first)."""
    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "cache"))
    traces = trace_dir(tmp_path / "t", 50)
    first = tracekit.open(traces)
    version = first.version  # (its live version: RUN/versions/v-...)
    first.close()

    def snapshot():
        return {os.path.relpath(os.path.join(r, n), version): (os.stat(os.path.join(r, n)).st_mtime_ns,
                                                               open(os.path.join(r, n), "rb").read())
                for r, _, fs in os.walk(version) for n in fs}

    before = snapshot()
    again = tracekit.open(traces)
    assert again.version == version  # (the cached run, not a new version)
    again.close()
    assert main(["report", str(traces), "summary", "--format", "csv"]) == 0
    assert snapshot() == before


def _planted_link(tmp_path, monkeypatch):
    """A user's run, and a link to it planted in the cache folder under a name the cache gives its own runs."""
    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "cache"))
    users = tracekit.ingest([trace_dir(tmp_path / "t", 20)], tmp_path / "mine", jobs=1)
    (tmp_path / "cache").mkdir()
    link = tmp_path / "cache" / ("run-" + "ab" * 8)
    link.symlink_to(users.directory)
    users.close()

    def listing():
        return sorted(os.path.relpath(os.path.join(r, n), users.directory)
                      for r, ds, fs in os.walk(users.directory) for n in ds + fs)

    return users.directory, link, listing


def test_cache_clear_never_removes_through_a_link_it_did_not_make(tmp_path, monkeypatch, capsys):
    run, link, listing = _planted_link(tmp_path, monkeypatch)
    before = listing()
    assert main(["cache", "clear"]) == 0
    assert "removed 0 cached runs" in capsys.readouterr().out
    assert listing() == before and link.is_symlink()  # the user's run whole, the link left alone
    assert tracekit.open(run).sql("SELECT count(*) AS n FROM events").column("n").to_pylist() == [20]
    assert main(["cache", "list", "--format", "csv"]) == 0
    assert str(link) not in capsys.readouterr().out


def test_the_cache_cap_never_removes_through_a_link_it_did_not_make(tmp_path, monkeypatch):
    run, link, listing = _planted_link(tmp_path, monkeypatch)
    before = listing()
    monkeypatch.setenv("TRACEKIT_CACHE_MAX_MB", "0")  # every run but the one just opened is over the cap
    tracekit.open(trace_dir(tmp_path / "other", 5)).close()
    assert listing() == before and link.is_symlink()
    assert tracekit.open(run).sql("SELECT count(*) AS n FROM events").column("n").to_pylist() == [20]


def test_opening_traces_never_writes_through_a_link_in_the_cache(tmp_path, monkeypatch):
    import tracekit.cache
    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "cache"))
    traces = trace_dir(tmp_path / "t", 7)
    users = tracekit.ingest([trace_dir(tmp_path / "u", 20)], tmp_path / "mine", jobs=1)
    users.close()
    (tmp_path / "cache").mkdir()
    link = tracekit.cache.dir_for([str(traces)])  # the very name these traces' cache run would take
    os.symlink(users.directory, link)
    versions = sorted(os.listdir(os.path.join(users.directory, "versions")))
    with pytest.raises(tracekit.TracekitError, match=r"run-[0-9a-f]{16}: a symbolic link .*remove it"):
        tracekit.open(traces)
    assert sorted(os.listdir(os.path.join(users.directory, "versions"))) == versions  # no new version in it


def test_a_writer_lock_that_is_a_link_is_never_written_through(tmp_path, monkeypatch):
    """A cache run's files planted as links (its writer.lock to a user's file): the fill writes its pid into
    writer.lock; through the link it emptied the user's file."""
    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "cache"))
    traces = trace_dir(tmp_path / "t", 7)
    run = tracekit.open(traces)
    run.close()
    precious = tmp_path / "precious.txt"
    precious.write_text("the user's notes\n")
    lock = os.path.join(run.directory, "writer.lock")
    os.remove(lock)
    os.symlink(precious, lock)
    (traces / "rank0.json").write_text((traces / "rank0.json").read_text().replace('"k"', '"q"'))  # a new fill
    with pytest.raises(tracekit.TracekitError, match=r"writer\.lock: a symbolic link"):
        tracekit.open(traces)
    assert precious.read_text() == "the user's notes\n"
