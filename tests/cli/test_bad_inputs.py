"""Broken inputs and file-system faults get one clear line naming the file and place, never an internal
error (exit 70), and never a silently wrong or lost value."""

import json
import os

import pytest

import tracekit
from tests.conftest import dist, write_trace
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
    (K + ',"args":{"In msg nelems":' + str(2**70) + "}}", "args['In msg nelems'] = 1180591620717411303424 does not fit"),
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
    assert code == 1 and "not a regular file" in err
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
    (tmp_path / "r" / "manifest.json").write_text("{not json")
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
    before = (tmp_path / "r" / "manifest.json").read_text()

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "r" / "traces.parquet"))
    monkeypatch.setattr(run_writer, "reduce_run", full)
    code, err = ingest(capsys, p, "-o", tmp_path / "r", "--force")
    assert code == 1 and "cannot write the run" in err and "No space left on device" in err
    assert (tmp_path / "r" / "manifest.json").read_text() == before
    assert not [d for d in os.listdir(tmp_path) if ".tmp-" in d]  # nothing half-built left behind
