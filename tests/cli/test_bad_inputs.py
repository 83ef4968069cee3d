"""Broken inputs and file-system faults get one clear line naming the file and place, never an internal
error (exit 70), and never a silently wrong or lost value."""

import json
import os

import pytest

import tracekit
from tests.conftest import dist, live, write_trace
from tracekit.cli.main import main

K = '{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":1'


def trace(tmp_path, events_text: str, header: str = '"schemaVersion":1', name="rank0.json"):
    p = tmp_path / name
    p.write_bytes(("{" + header + ',"traceEvents":[' + events_text + "]}").encode()
                  if isinstance(events_text, str) else events_text)
    return p


def ingest(capsys, *args):
    code = main(["ingest", *map(str, args)])
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err, err
    return code, err


@pytest.mark.parametrize("events, words", [
    (K + ',"args":{"In msg nelems":' + str(2**70) + "}}",
     "args['In msg nelems'] = 1180591620717411303424 does not fit"),
    (K + ',"args":{"External id":' + str(2**64) + "}}", "does not fit in 64 bits"),
    ('{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":1,"args":{"dtype":"\xff"}}', "event #0"),
    ('{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":1,"args":{"other":"\xff"}}', "event #0"),
])
def test_bad_values_in_args(tmp_path, capsys, events, words):
    p = tmp_path / "rank0.json"
    p.write_bytes(('{"traceEvents":[' + events + "]}").encode("latin-1"))
    code, err = ingest(capsys, p, "-o", tmp_path / "run")
    assert code == 2 and str(p) in err and words in err


def test_ids_past_64_bits_keep_their_text(tmp_path):
    big = 2**64 + 5
    p = trace(tmp_path, f'{{"ph":"s","cat":"ac2g","name":"f","pid":{big},"tid":{big},"ts":1,"id":{big}}}')
    run = tracekit.ingest([p], tmp_path / "run", jobs=1)
    (r,) = run.sql("SELECT pid, pid_text, tid_text, flow_id, flow_id_text FROM events").to_pylist()
    assert r == {"pid": None, "pid_text": str(big), "tid_text": str(big), "flow_id": None, "flow_id_text": str(big)}


@pytest.mark.parametrize("header", [
    '"distributedInfo":{"rank":true}', '"distributedInfo":{"rank":' + str(2**70) + "}",
])
def test_bad_rank_in_header(tmp_path, capsys, header):
    p = trace(tmp_path, K + "}", header, name="t.json")
    code, err = ingest(capsys, p, "-o", tmp_path / "run")
    assert code == 3 and "distributedInfo.rank is" in err and "--rank t.json=N" in err


@pytest.mark.parametrize("header", [
    '"baseTimeNanoseconds":' + str(2**70), '"schemaVersion":' + str(2**70), '"deviceProperties":{"a":1}',
    '"deviceProperties":3', '"distributedInfo":{"rank":0,"pg_config":3}',
    '"distributedInfo":{"rank":0,"pg_config":[{"pg_name":"0","pg_desc":7,"pg_size":2,"ranks":[0,1]}],"backend":5}',
    '"displayTimeUnit":{"x":1}', '"distributedInfo":{"rank":0,"world_size":' + str(2**70) + "}",
])
def test_header_fields_of_the_wrong_type_are_left_null(tmp_path, capsys, header):
    p = trace(tmp_path, K + "}", header)
    code, err = ingest(capsys, p, "-o", tmp_path / "run")
    assert code == 0, err
    meta = json.loads(tracekit.open(tmp_path / "run").sql("SELECT metadata FROM traces").to_pylist()[0]["metadata"])
    key = header.split(":")[0].strip('"')
    assert key in meta  # kept as written in metadata


def test_rank_past_the_limit_in_a_name_or_option(tmp_path, capsys):
    p = trace(tmp_path, K + "}", name=f"rank{2**70}.json")
    q = trace(tmp_path, K + "}", name="rank1.json")
    code, err = ingest(capsys, tmp_path, "-o", tmp_path / "run")
    assert code == 3 and "too large" in err and str(p) in err
    code, err = ingest(capsys, q, "-o", tmp_path / "run2", "--rank", f"rank1.json={2**70}")
    assert code == 3 and "a rank is an integer" in err


def test_unreadable_file(tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root reads every file; a permission error cannot be made here")
    p = trace(tmp_path, K + "}")
    p.chmod(0)
    code, err = ingest(capsys, p, "-o", tmp_path / "run")
    assert code == 2 and "cannot read it" in err


def test_a_missing_file_listed_explicitly_and_skip(tmp_path, capsys):
    """A file that vanishes (or cannot be opened) between discovery and reading is an input error,
    recorded under --on-error skip."""
    good = trace(tmp_path, K + "}", '"distributedInfo":{"rank":0}', name="a.json")
    bad = tmp_path / "b.json"
    bad.symlink_to(tmp_path / "b.json")  # a link to itself: opening it fails (ELOOP)
    code, err = ingest(capsys, good, bad, "-o", tmp_path / "run")
    assert code == 2 and "not a regular file" in err  # an input that cannot be read: 2, as a file not a trace
    code, err = ingest(capsys, tmp_path, "-o", tmp_path / "run")  # scanned: skipped with a warning
    assert code == 0 and "skipping" in err and "b.json" in err


def test_fifo_in_a_scanned_directory_is_skipped(tmp_path, capsys):
    trace(tmp_path, K + "}", '"distributedInfo":{"rank":0}', name="a.json")
    os.mkfifo(tmp_path / "rank1.json")
    code, err = ingest(capsys, tmp_path, "-o", tmp_path / "run")
    assert code == 0 and f"skipping {tmp_path / 'rank1.json'}: not a regular file" in err


def test_nested_traceevents_do_not_count(tmp_path):
    p = tmp_path / "rank0.json"
    p.write_text('{"distributedInfo":{"traceEvents":[]},"traceEvents":[' + K + "}]}")
    run = tracekit.ingest([p], tmp_path / "run", jobs=1)
    assert run.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 1}]


def test_input_inside_the_output_run_is_refused(tmp_path, capsys):
    p = trace(tmp_path, K + "}", '"distributedInfo":{"rank":0}')
    assert main(["ingest", str(p), "-o", str(tmp_path / "r")]) == 0
    inner = tmp_path / "r" / "rank5.json.gz"
    write_trace(inner, [json.loads(K + "}")], header=dist(5))
    code, err = ingest(capsys, inner, "-o", tmp_path / "r")
    assert code == 1 and "inside the output run" in err
    assert inner.exists()


def test_damaged_manifest(tmp_path, capsys):
    p = trace(tmp_path, K + "}", '"distributedInfo":{"rank":0}')
    assert main(["ingest", str(p), "-o", str(tmp_path / "r")]) == 0
    (live(tmp_path / "r") / "manifest.json").write_text("{not json")
    assert main(["sql", str(tmp_path / "r"), "SELECT 1"]) == 4
    err = capsys.readouterr().err
    assert "manifest.json: damaged or unreadable" in err and "Traceback" not in err


def test_read_only_output_is_a_clear_error(tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere; a read-only directory cannot be made here")
    p = trace(tmp_path, K + "}", '"distributedInfo":{"rank":0}')
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    code, err = ingest(capsys, p, "-o", ro / "run")
    assert code == 1 and "cannot write the run" in err


def test_disk_full_while_writing_keeps_the_earlier_run(tmp_path, capsys, monkeypatch):
    import errno

    from tracekit.ingestion import run_writer
    p = trace(tmp_path, K + "}", '"distributedInfo":{"rank":0}')
    assert main(["ingest", str(p), "-o", str(tmp_path / "r")]) == 0
    before = (live(tmp_path / "r") / "manifest.json").read_text()

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device", str(live(tmp_path / "r") / "traces.parquet"))
    monkeypatch.setattr(run_writer, "reduce_run", full)
    code, err = ingest(capsys, p, "-o", tmp_path / "r", "--force")
    assert code == 1 and "cannot write the run" in err and "No space left on device" in err
    assert (live(tmp_path / "r") / "manifest.json").read_text() == before
    assert not [d for d in os.listdir(tmp_path) if ".tmp-" in d]  # nothing half-built left behind


def test_a_second_ingest_into_the_same_run_fails_clearly(tmp_path, capsys):
    import fcntl
    p = trace(tmp_path, K + "}", '"distributedInfo":{"rank":0}')
    (tmp_path / "r").mkdir()
    with open(tmp_path / "r" / "writer.lock", "a+") as held:  # what a running first ingest into r holds
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("pid 4242")
        held.flush()
        code, err = ingest(capsys, p, "-o", tmp_path / "r")
    assert code == 1 and "another tracekit ingest is writing this run (pid 4242)" in err
    assert not (tmp_path / "r" / "CURRENT").exists()
    assert main(["ingest", str(p), "-o", str(tmp_path / "r")]) == 0  # released: it goes through


def test_leftovers_of_a_dead_ingest_are_cleaned_and_nothing_beside_the_run_is_touched(tmp_path, capsys):
    p = trace(tmp_path, K + "}", '"distributedInfo":{"rank":0}')
    assert main(["ingest", str(p), "-o", str(tmp_path / "r")]) == 0
    # a killed ingest: an unfinished version, its trash, a CURRENT it never put in place
    (tmp_path / "r" / "versions" / "v-1-4242" / "events").mkdir(parents=True)
    (tmp_path / "r" / "trash" / "v-2-4242").mkdir(parents=True)
    (tmp_path / "r" / "CURRENT.tmp-4242").write_text("v-1-4242\n")
    # beside the run: names the earlier layout used, made by someone else
    dead = 2**22 + 12345
    (tmp_path / f".r.v-{dead}-1").mkdir()
    (tmp_path / f".r.link-{dead}").symlink_to(f".r.v-{dead}-1")
    (tmp_path / f"r.old-{dead}").mkdir()
    run = tracekit.open(tmp_path / "r")
    assert run.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 1}]
    run.close()
    assert main(["ingest", str(p), "-o", str(tmp_path / "r"), "--force"]) == 0
    assert sorted(os.listdir(tmp_path / "r")) == ["CURRENT", "tracekit-run.json", "versions", "writer.lock"]
    assert os.listdir(tmp_path / "r" / "versions") == [(tmp_path / "r" / "CURRENT").read_text().strip()]
    assert sorted(e for e in os.listdir(tmp_path) if f"-{dead}" in e) == [f".r.link-{dead}", f".r.v-{dead}-1",
                                                                             f"r.old-{dead}"]


def test_a_reader_keeps_the_run_it_opened_while_it_is_replaced(tmp_path):
    p = trace(tmp_path, K + "}", '"distributedInfo":{"rank":0}')
    old = tracekit.ingest([p], tmp_path / "r", jobs=1)
    assert (tmp_path / "r" / "CURRENT").is_file()  # the run names its current version
    trace(tmp_path, K + "}," + K + "}", '"distributedInfo":{"rank":0}')
    new = tracekit.ingest([p], tmp_path / "r", jobs=1)
    assert old.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 1}]  # still its version
    assert new.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 2}]
    versions = sorted(os.listdir(tmp_path / "r" / "versions"))
    assert len(versions) == 2  # the current one and the previous, for readers still on it
    old.close()  # no reader holds the first version any more
    tracekit.ingest([p], tmp_path / "r", jobs=1, force=True)
    assert len(os.listdir(tmp_path / "r" / "versions")) == 2  # the new one and the one `new` holds


def test_output_that_is_a_link_to_a_run_updates_the_run(tmp_path):
    p = trace(tmp_path, K + "}", '"distributedInfo":{"rank":0}')
    assert main(["ingest", str(p), "-o", str(tmp_path / "real")]) == 0
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert main(["ingest", str(p), "-o", str(tmp_path / "link"), "--force"]) == 0
    assert (tmp_path / "link").is_symlink() and os.readlink(tmp_path / "link") == str(tmp_path / "real")
    assert (live(tmp_path / "real") / "manifest.json").exists() and not (tmp_path / "real").is_symlink()


@pytest.mark.slow
def test_pool_workers_die_with_a_killed_ingest(tmp_path):
    import signal
    import subprocess
    import sys
    import time
    psutil = pytest.importorskip("psutil")
    big = ",".join(K + "}" for _ in range(150000))
    for r in range(4):
        trace(tmp_path, big, f'"distributedInfo":{{"rank":{r}}}', name=f"rank{r}.json")
    proc = subprocess.Popen([sys.executable, "-m", "tracekit.cli.main", "ingest", str(tmp_path), "-o",
                             str(tmp_path / "run"), "--jobs", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    parent = psutil.Process(proc.pid)
    deadline = time.time() + 60
    while time.time() < deadline and len(parent.children()) < 2:
        time.sleep(0.05)
    workers = parent.children(recursive=True)
    assert workers, "the ingest started no pool workers"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    gone, alive = psutil.wait_procs(workers, timeout=15)
    assert not [w for w in alive if w.status() != psutil.STATUS_ZOMBIE], "workers outlived their parent"


@pytest.mark.parametrize("where", ["args", "unknown key", "header"])
def test_nesting_too_deep_is_an_input_error(tmp_path, capsys, where):
    deep = "[" * 5000 + "]" * 5000
    if where == "header":
        p = trace(tmp_path, K + "}", '"deep":' + deep)
    else:
        p = trace(tmp_path, K + (',"args":{"x":' + deep + "}}" if where == "args" else ',"zz":' + deep + "}"))
    code, err = ingest(capsys, p, "-o", tmp_path / "run")
    assert code == 2 and str(p) in err and "nested deeper than the JSON decoder allows" in err


def test_hostile_shapes_are_linear_and_bounded(tmp_path, capsys, monkeypatch):
    """A string full of "},{", events full of [{}, {}, ...], and a gap or a string past the event limit
    (TRACEKIT_MAX_EVENT_MB, lowered here to 1 MB): exact results, or a clear error, never a hang."""
    sep = trace(tmp_path, K + ',"zz":"' + "},{" * 300_000 + '"},' + K + "}", name="rank0.json")
    objs = trace(tmp_path, ",".join(K + ',"zz":[' + ",".join(["{}"] * 300) + "]}" for _ in range(200)),
                 name="rank1.json")
    for p, n in ((sep, 2), (objs, 200)):
        run = tracekit.ingest([p], tmp_path / f"run-{n}", jobs=1)
        assert run.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": n}]
    monkeypatch.setenv("TRACEKIT_MAX_EVENT_MB", "1")
    gap = trace(tmp_path, K + "}," + " " * (10 << 20) + K + "}", name="rank2.json")  # past one 8 MB read
    big = trace(tmp_path, K + ',"zz":"' + "x" * (10 << 20) + '"}', name="rank3.json")
    for p in (gap, big):
        code, err = ingest(capsys, p, "-o", tmp_path / "run-x")
        assert code == 2 and "longer than 1 MB" in err and "TRACEKIT_MAX_EVENT_MB=2" in err


def test_an_unreadable_file_is_named_and_skippable(tmp_path, capsys, monkeypatch):
    """EACCES cannot be made as root (CI runs as root), so the open is made to fail as it would."""
    import builtins
    good = trace(tmp_path, K + "}", '"distributedInfo":{"rank":0}', name="a.json")
    bad = trace(tmp_path, K + "}", '"distributedInfo":{"rank":1}', name="b.json")
    real_open = builtins.open

    def guarded(file, *a, **k):
        if str(file) == str(bad):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *a, **k)
    monkeypatch.setattr(builtins, "open", guarded)
    code, err = ingest(capsys, tmp_path, "-o", tmp_path / "run", "--jobs", "1")
    assert code == 2 and f"{bad}: cannot read it (Permission denied)" in err
    code, err = ingest(capsys, tmp_path, "-o", tmp_path / "run", "--jobs", "1", "--on-error", "skip")
    assert code == 0 and "cannot read it" in err
    m = json.loads((live(tmp_path / "run") / "manifest.json").read_text())
    assert [i["path"] for i in m["inputs"]] == [str(good)] and m["failures"][0]["path"] == str(bad)


def test_a_reader_keeps_its_version_through_many_reingests_and_orphans_go(tmp_path):
    """Issue 20, item 13: held for as long as the reader is open (not for one re-ingest only), and a
    complete version whose swap was killed (a dead ingest's) is removed, not left to pile up."""
    p = trace(tmp_path, K + "}", '"distributedInfo":{"rank":0}')
    old = tracekit.ingest([p], tmp_path / "r", jobs=1)
    for n in (2, 3, 4):  # three re-ingests while `old` is open
        trace(tmp_path, ",".join([K + "}"] * n), '"distributedInfo":{"rank":0}')
        tracekit.ingest([p], tmp_path / "r", jobs=1)
    assert old.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 1}]
    versions = os.listdir(tmp_path / "r" / "versions")
    assert len(versions) == 2  # the current one and the one `old` holds; the two in between are gone
    # a dead ingest's complete version, never switched in: removed by the next ingest's recovery
    import shutil
    shutil.copytree(live(tmp_path / "r"), tmp_path / "r" / "versions" / "v-1-4242")
    old.close()
    tracekit.ingest([p], tmp_path / "r", jobs=1, force=True)
    assert os.listdir(tmp_path / "r" / "versions") == [live(tmp_path / "r").name]


def test_advise_on_a_zero_length_step_says_there_is_no_step_time(tmp_path, capsys):
    """Issue 40, item 10: a run whose only ProfilerStep lasts 0 ns (its one kernel too) has no step time to
    measure savings against: advise ended in a TypeError (exit 70). It says so, and finds nothing."""
    from tests.tracegen import kernel, step
    write_trace(tmp_path / "rank0.json", [step(1, 100, 0), *kernel("gemm", 100, 0)], header=dist(0, world=1))
    assert main(["advise", str(tmp_path / "rank0.json"), "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[1:] == []  # no finding
    assert err.startswith("no step time: no rank has a step or a timeline of any length (its ProfilerSteps last "
                          "0 ns, or it has none and no kernel or collective)")


def _two_rank_run(tmp_path):
    """2 ranks of 2 steps (1 ms each), a GEMM and an allreduce a step."""
    from tests.tracegen import kernel, step
    d = tmp_path / "t"
    d.mkdir()
    for r in range(2):
        evs = []
        for s in range(2):
            evs += [step(s + 1, s * 1000, 1000), *kernel("gemm", s * 1000 + 10, 200), *kernel(
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL", s * 1000 + 300 + 10 * r, 100, stream=20, **{
                    "Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024,
                    "dtype": "Float", "Seq": s, "Process Group Name": "0", "Process Group Description": "default_pg",
                    "Group size": 2, "Process Group Ranks": "[0, 1]"})]
        write_trace(d / f"rank{r}.json", evs, header=dist(r, world=2))
    assert main(["ingest", str(d), "-o", str(tmp_path / "run")]) == 0
    return tmp_path / "run"


def _steps_csv(capsys, run):
    capsys.readouterr()
    q = "SELECT rank, count(*) AS n FROM steps GROUP BY rank ORDER BY rank"
    code = main(["sql", str(run), q, "--format", "csv"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("damage", ["deleted", "truncated", "scrambled"])
def test_damaged_facts_say_how_to_derive_them_again(tmp_path, capsys, damage):
    """Issue 40, item 9: facts deleted or cut short by hand ended every command in 'internal error ... (a
    tracekit bug)', exit 70, with a literal \\n\\n; --rederive repaired it but nothing said so. The error
    names the run and the fact and says to derive them again; after that the run answers as before (2
    steps a rank, as the traces hold)."""
    run = _two_rank_run(tmp_path)
    steps = live(run) / "facts" / "steps"
    if damage == "deleted":
        for f in steps.iterdir():
            f.unlink()
    elif damage == "truncated":
        for f in steps.iterdir():
            f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    else:  # its first half overwritten, its size kept
        for f in steps.iterdir():
            data = f.read_bytes()
            f.write_bytes(data[:4] + b"\xab" * (len(data) // 2 - 4) + data[len(data) // 2:])
    code, _, err = _steps_csv(capsys, run)
    assert code == 4, err
    assert err.startswith(f"error: {run}: its steps facts cannot be read (")
    assert err.endswith(f"): a file of the run was changed or removed since tracekit wrote it; derive the facts "
                        f"again from its events with `tracekit ingest --rederive {run}`\n")
    assert "\\n" not in err and len(err.splitlines()) == 1
    assert main(["ingest", "--rederive", str(run)]) == 0
    assert _steps_csv(capsys, run)[:2] == (0, "rank,n\n0,2\n1,2\n")


def test_a_ranks_deleted_events_are_noticed(tmp_path, capsys):
    """Issue 40, item 9: with events/rank=1 deleted, advise replayed rank 1 from nothing (a 93 % replay error,
    no reason given). What reads the events says which rank's are missing, and what to do; advise says why
    it has no replay."""
    import shutil
    run = _two_rank_run(tmp_path)
    shutil.rmtree(live(run) / "events" / "rank=1")
    said = (f"{run}: the events of rank 1 are missing ({live(run) / 'events' / 'rank=1'}); what needs them (raw "
            "events, the dependency graph: replay, critical_path, advise's savings) cannot answer: ingest the "
            "traces again with --force")
    capsys.readouterr()
    assert main(["report", str(run), "critical_path"]) == 4
    assert capsys.readouterr().err == f"error: {said}\n"
    assert main(["advise", str(run), "--format", "csv"]) == 0
    assert f"no replay ({said})" in " ".join(capsys.readouterr().err.split())
