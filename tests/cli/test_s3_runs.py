"""A run in an object store (issue 39): `tracekit ingest TRACES -o s3://bucket/run`, the handler's rank parts
written there and reduced there, and every reader, against a local S3-compatible server the tests start
(tests/s3_server.py: moto, the endpoint given as the AWS tools read it, AWS_ENDPOINT_URL). The oracle is a
local run of the same traces (the run directory's own code path): every report's JSON, the HTML page and a
diff equal; the store's own listing (boto3, not tracekit) for what is there and what was fetched."""

import json
import os
import re
import signal
import subprocess
import sys

import pytest

from tests.cli.test_rank_parts import EXAMPLES, answers, traces_of
from tests.s3_server import aws_env, s3_server
from tracekit.cli.main import main
from tracekit.reports import REGISTRY


@pytest.fixture(scope="module")
def server():
    with s3_server() as s:
        yield s


@pytest.fixture
def s3(server, monkeypatch, tmp_path):
    """The environment pointed at the server; a prefix of the bucket of this test's own."""
    aws_env(monkeypatch, server, tmp_path)
    prefix = f"t/{os.path.basename(tmp_path)}"
    return dict(server, url=f"s3://{server['bucket']}/{prefix}", prefix=prefix)


def objects(s3, under: str = "") -> dict[str, int]:
    """The objects under the test's prefix (read with boto3, not tracekit): {key in the run: size}."""
    import boto3

    c = boto3.client("s3", endpoint_url=s3["endpoint"], region_name="us-east-1", aws_access_key_id=s3["key"],
                     aws_secret_access_key=s3["secret"])
    out, token = {}, None
    base = s3["prefix"] + "/"
    while True:
        kw = {"ContinuationToken": token} if token else {}
        page = c.list_objects_v2(Bucket=s3["bucket"], Prefix=base + under, **kw)
        out.update({o["Key"][len(base):]: o["Size"] for o in page.get("Contents", [])
                    if not o["Key"].endswith("/")})  # (pyarrow's empty markers of a 'directory' left by a removal)
        if not page.get("IsTruncated"):
            return out
        token = page["NextContinuationToken"]


def live_version(s3) -> tuple[dict, dict]:
    """The objects of the live version: (its events files, the rest), {key: size} each."""
    name = current_of(s3)
    version = {k: v for k, v in objects(s3).items() if k.startswith(f"versions/{name}/")}
    events = {k: v for k, v in version.items() if k.startswith(f"versions/{name}/events/")}
    return events, {k: v for k, v in version.items() if k not in events}


def current_of(s3) -> str:
    import boto3

    c = boto3.client("s3", endpoint_url=s3["endpoint"], region_name="us-east-1", aws_access_key_id=s3["key"],
                     aws_secret_access_key=s3["secret"])
    return c.get_object(Bucket=s3["bucket"], Key=f"{s3['prefix']}/CURRENT")["Body"].read().decode().strip()


def said_of(capsys, argv, run) -> tuple:
    """A command's exit code and what it printed, on ``run`` (RUN in ``argv``), the run's name taken out."""
    capsys.readouterr()
    code = main([str(run) if a == "RUN" else a for a in argv])
    said = capsys.readouterr()
    return code, said.out.replace(str(run), "RUN"), said.err.replace(str(run), "RUN")


def page(capsys, run, out) -> str:
    """The HTML page of ``run`` with its name and the time it was made taken out (they differ by design)."""
    assert main(["html", str(run), "-o", str(out)]) == 0
    capsys.readouterr()
    text = out.read_text().replace(str(run), "RUN")
    return re.sub(r"tracekit [^,<]+, [0-9T:-]+</p>", "", text)


def test_ingest_into_s3_answers_every_report_html_and_diff_as_a_local_run(s3, tmp_path, capsys):
    url, local = s3["url"], tmp_path / "local"
    traces = EXAMPLES / "ddp"
    assert main(["ingest", str(traces), "-o", url]) == 0
    assert main(["ingest", str(traces), "-o", str(local)]) == 0
    said = capsys.readouterr()
    assert said.out.startswith(f"{url}: 2 traces, ") and said.err == ""
    assert not os.path.exists("s3:")  # never a local folder named after the URL
    held = objects(s3)
    name = current_of(s3)
    assert f"versions/{name}/manifest.json" in held and "tracekit-run.json" in held
    assert {k.split("/")[1] for k in held if k.startswith("versions/")} == {name}  # one version, whole
    # every report's JSON equal to the local run's
    central, remote = answers(capsys, local), answers(capsys, url)
    assert sum(code == 0 for code, _ in central.values()) >= 10
    for report in REGISTRY:
        assert remote[report] == central[report], report
    assert page(capsys, url, tmp_path / "s3.html") == page(capsys, local, tmp_path / "local.html")
    ranks = "SELECT rank, count(*) AS n FROM events GROUP BY rank ORDER BY rank"
    for argv in (["advise", "RUN", "--format", "json"], ["whatif", "RUN", "--format", "json"],
                 ["sql", "RUN", ranks, "--format", "json"], ["doctor", "RUN", "--format", "json"]):
        assert said_of(capsys, argv, url) == said_of(capsys, argv, local), argv
    # diff: of two runs in the store, as of the same two runs here (and the store's run against its own traces)
    other, other_local = url + "-tp", tmp_path / "local-tp"
    assert main(["ingest", str(EXAMPLES / "tp"), "-o", other]) == 0
    assert main(["ingest", str(EXAMPLES / "tp"), "-o", str(other_local)]) == 0
    capsys.readouterr()
    assert main(["diff", url, other, "--format", "json"]) == 0
    in_store = json.loads(capsys.readouterr().out)
    assert main(["diff", str(local), str(other_local), "--format", "json"]) == 0
    assert in_store == json.loads(capsys.readouterr().out) and in_store
    # up to date: nothing uploaded again (the same version stays live)
    assert main(["ingest", str(traces), "-o", url]) == 0
    assert "up to date (2 inputs unchanged)" in capsys.readouterr().out
    assert current_of(s3) == name


def test_a_reader_fetches_the_live_version_once_into_the_cache(s3, tmp_path, monkeypatch):
    import tracekit
    from tracekit import cache

    url = s3["url"]
    writer, reader = str(tmp_path / "writer-cache"), str(tmp_path / "reader-cache")  # two machines' caches
    monkeypatch.setenv("TRACEKIT_CACHE", writer)
    assert main(["ingest", str(EXAMPLES / "ddp"), "-o", url]) == 0
    mine = tracekit.open(url)  # the writer's own machine: the version it uploaded is in its cache already
    assert mine.fetched["bytes"] == 0 and mine.version.startswith(writer)
    mine.close()
    monkeypatch.setenv("TRACEKIT_CACHE", reader)
    run = tracekit.open(url)
    events, rest = live_version(s3)
    assert run.fetched["files"] == len(rest) and run.fetched["bytes"] == sum(rest.values())  # all but the events
    assert run.version.startswith(reader) and run.name == url
    tracekit.report(run, "summary")  # (the stored facts: no events needed)
    assert "events_bytes" not in run.fetched and os.listdir(os.path.join(run.version, "events")) == []
    n = run.sql("SELECT count(*) AS n FROM events").column("n")[0].as_py()
    assert n == 2 * 1704  # 1,704 traceEvents in each of ddp's two traces
    assert run.fetched["events_files"] == len(events) and run.fetched["events_bytes"] == sum(events.values())
    run.close()
    again = tracekit.open(url)
    assert again.fetched["bytes"] == 0 and again.fetched["files"] == 0  # the cache holds that version
    again.close()
    assert [e["run"] for e in cache.entries()] == [cache.dir_for_url(url)]  # the cache's own: listed, capped
    # a new version in the store: the reader fetches it, and keeps that one only
    monkeypatch.setenv("TRACEKIT_CACHE", writer)
    assert main(["ingest", str(EXAMPLES / "ddp"), "-o", url, "--force"]) == 0
    monkeypatch.setenv("TRACEKIT_CACHE", reader)
    third = tracekit.open(url)
    _, rest = live_version(s3)
    assert third.fetched["files"] == len(rest) and third.fetched["bytes"] == sum(rest.values())
    assert os.listdir(os.path.join(cache.dir_for_url(url), "versions")) == [current_of(s3)]
    third.close()
    assert {k.split("/")[1] for k in objects(s3, "versions/")} == {current_of(s3)}  # the replaced one removed


def test_rank_parts_written_into_s3_reduce_to_the_local_answers(s3, tmp_path, capsys):
    url = s3["url"]
    files = traces_of(EXAMPLES / "tp")
    from tracekit.profiler import start_part, wait_for_parts

    for f in files:  # as the handler makes them: python -m tracekit.ingestion.rank_part, a process of its own
        start_part(str(f), url, 3)
    assert wait_for_parts(timeout=300) == [0, 0]
    held = objects(s3, "parts/")
    assert sorted(k for k in held if k.endswith("part.json")) == [
        "parts/iteration_3/rank-0/part.json", "parts/iteration_3/rank-1/part.json"]
    capsys.readouterr()
    assert main(["report", url, "summary"]) == 4
    assert "no run built from them yet" in capsys.readouterr().err
    assert main(["ingest", "--reduce", url]) == 0
    said = capsys.readouterr()
    assert "2 ranks of 2 reduced" in said.out and said.err == ""
    assert main(["ingest", str(EXAMPLES / "tp"), "-o", str(tmp_path / "central")]) == 0
    assert answers(capsys, url) == answers(capsys, tmp_path / "central")


# A kill -9 in the middle of an upload: after some of the files went up, before the rest.
_KILL_MID_UPLOAD = """
import os, signal, sys, threading, time
from tracekit.layout import objstore
sig = getattr(signal, sys.argv[2])
moved, lock = [], threading.Lock()
def unwinding():  # the main thread took the SIGINT: it waits for the uploads under way to end
    f = sys._current_frames().get(threading.main_thread().ident)
    while f is not None and f.f_code.co_name != "shutdown":
        f = f.f_back
    return f is not None
def then_die(move):
    def each(self, a, b):
        with lock:
            if len(moved) == int(sys.argv[1]):
                os.kill(os.getpid(), sig)
                # (SIGINT: the main thread raises, here if it runs this upload; this file is not moved. A
                # loaded machine took more than 5 s to: wait for it, up to a minute)
                for _ in range(600):
                    if unwinding():
                        break
                    time.sleep(0.1)
                raise OSError("stopped")
            moved.append(b)
        return move(self, a, b)
    return each
op = sys.argv[3]  # put_file (an upload) or get_file (a download)
setattr(objstore.Store, op, then_die(getattr(objstore.Store, op)))
objstore.THREADS = 1  # one file at a time: the kill comes after exactly N files
if sys.argv[4] == "part":
    from tracekit.ingestion.rank_part import make_part
    make_part(sys.argv[5], sys.argv[6])
else:
    from tracekit.cli.main import main
    sys.exit(main(sys.argv[4:]))
"""


def _killed(n: int, what: str, *args, sig: str = "SIGKILL", op: str = "put_file") -> subprocess.CompletedProcess:
    """Run ``what`` (part TRACE RUN, or a command line of tracekit), killed by ``sig`` when N files have moved
    (``op``: put_file, uploaded; get_file, downloaded)."""
    p = subprocess.run([sys.executable, "-c", _KILL_MID_UPLOAD, str(n), sig, op, what, *map(str, args)],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=os.getcwd()))
    if sig == "SIGKILL":
        assert p.returncode == -signal.SIGKILL, p.stderr
    return p


def test_an_ingest_killed_mid_upload_leaves_the_earlier_run(s3, tmp_path, capsys, monkeypatch):
    url = s3["url"]
    assert main(["ingest", str(EXAMPLES / "ddp"), "-o", url]) == 0
    before, live = answers(capsys, url), current_of(s3)
    _killed(5, "ingest", EXAMPLES / "tp", "-o", url, "--force")  # 5 files of tp's version uploaded, then killed
    half = {k.split("/")[1] for k in objects(s3, "versions/")} - {live}
    assert len(half) == 1  # its objects are there, but no manifest and no CURRENT naming them
    assert not any(k.endswith("manifest.json") for k in objects(s3, f"versions/{half.pop()}/"))
    assert current_of(s3) == live
    assert answers(capsys, url) == before  # the earlier run, intact (read from a fresh fetch too)
    from tracekit.layout import remote

    monkeypatch.setattr(remote, "STALE_S", 0)  # (the killed writer's objects count as an hour old)
    assert main(["ingest", str(EXAMPLES / "tp"), "-o", url]) == 0  # a later ingest publishes whole ...
    assert {k.split("/")[1] for k in objects(s3, "versions/")} == {current_of(s3)}  # ... and removes them
    assert main(["ingest", str(EXAMPLES / "tp"), "-o", str(tmp_path / "local")]) == 0
    assert answers(capsys, url) == answers(capsys, tmp_path / "local")


def test_a_part_killed_mid_upload_is_no_part(s3, capsys):
    url = s3["url"]
    files = traces_of(EXAMPLES / "ddp")
    from tracekit.ingestion.rank_part import make_part

    make_part(str(files[0]), url)
    _killed(3, "part", files[1], url)  # rank 1's part: 3 of its files uploaded, then killed
    held = objects(s3, "parts/")
    assert any(k.startswith("parts/iteration_3/rank-1/") for k in held)  # its files went up ...
    assert "parts/iteration_3/rank-1/part.json" not in held  # ... but never its part.json: no part
    capsys.readouterr()
    assert main(["ingest", "--reduce", url]) == 0
    said = capsys.readouterr()
    assert "1 rank of 2 reduced" in said.out and "no part yet of 1 rank (1)" in said.err
    assert main(["sql", url, "SELECT DISTINCT rank FROM events", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"rank": 0}]
    # the same rank made again: its part replaces the half one whole, and the reduce takes it in
    make_part(str(files[1]), url)
    assert main(["ingest", "--reduce", url]) == 0
    assert "2 ranks of 2 reduced" in capsys.readouterr().out


def test_a_missing_bucket_is_one_line_and_writes_nothing(s3, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    url = "s3://no-such-bucket/run"
    assert main(["ingest", str(EXAMPLES / "ddp"), "-o", url]) == 1
    err = capsys.readouterr().err
    assert err == (f"error: {url}: the bucket 'no-such-bucket' does not exist at {s3['endpoint']}; create it "
                   "(aws s3 mb s3://no-such-bucket) or name a bucket that exists\n")
    assert main(["report", url, "summary"]) == 4
    assert "the bucket 'no-such-bucket' does not exist" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []  # no local folder named after the URL


def test_refused_credentials_are_one_line(s3, capsys, monkeypatch):
    url = s3["url"]
    assert main(["ingest", str(EXAMPLES / "ddp"), "-o", url]) == 0
    capsys.readouterr()
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-key")
    with s3["checking_keys"]():
        assert main(["report", url, "summary"]) == 4
        err = capsys.readouterr().err
        assert main(["ingest", str(EXAMPLES / "tp"), "-o", url, "--force"]) == 1
        err_ingest = capsys.readouterr().err
    for e in (err, err_ingest):
        assert e.startswith(f"error: {url}: the object store at {s3['endpoint']} refused the credentials") and \
            "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in e and e.count("\n") == 1


def test_an_unreachable_endpoint_is_one_line(s3, capsys, monkeypatch):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        gone = f"http://127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", gone)
    for argv, code in ([["report", s3["url"], "summary"], 4], [["ingest", str(EXAMPLES / "ddp"), "-o", s3["url"]], 1],
                       [["ingest", "--reduce", s3["url"]], 4]):
        assert main(argv) == code
        err = capsys.readouterr().err
        assert err.startswith(f"error: {s3['url']}: cannot reach the object store at {gone} ") and \
            "check AWS_ENDPOINT_URL" in err and err.count("\n") == 1, err


def test_a_prefix_holding_other_objects_is_never_written(s3, capsys):
    import boto3

    c = boto3.client("s3", endpoint_url=s3["endpoint"], region_name="us-east-1", aws_access_key_id=s3["key"],
                     aws_secret_access_key=s3["secret"])
    c.put_object(Bucket=s3["bucket"], Key=f"{s3['prefix']}/notes.txt", Body=b"someone's")
    assert main(["ingest", str(EXAMPLES / "ddp"), "-o", s3["url"]]) == 1
    assert "holds objects that are not a tracekit run (notes.txt)" in capsys.readouterr().err
    assert objects(s3) == {"notes.txt": 9}


def test_the_handler_asks_the_store_at_once_and_a_bucket_alone_is_no_run(s3, tmp_path, capsys):
    from tracekit.errors import TracekitError
    from tracekit.profiler import trace_handler

    with pytest.raises(TracekitError, match=r"^s3://no-such-bucket/run: the bucket 'no-such-bucket' does not exist"):
        trace_handler(str(tmp_path / "t"), run="s3://no-such-bucket/run")  # when made, not after a cycle
    assert trace_handler(str(tmp_path / "t"), run=s3["url"] + "/job-{step}")  # its bucket is there: made
    assert main(["ingest", str(EXAMPLES / "ddp"), "-o", f"s3://{s3['bucket']}"]) == 1
    assert "a run in an object store is s3://BUCKET/PREFIX" in capsys.readouterr().err


def test_ctrl_c_mid_upload_says_the_store_run_is_as_it_was(s3, capsys):
    url = s3["url"]
    assert main(["ingest", str(EXAMPLES / "ddp"), "-o", url]) == 0
    before, live = answers(capsys, url), current_of(s3)
    p = _killed(4, "ingest", EXAMPLES / "tp", "-o", url, "--force", sig="SIGINT")
    assert p.returncode == 130
    assert p.stderr.strip().splitlines()[-1].endswith(f"interrupted: nothing was written; {url} is as it was (an "
                                                      "earlier run there is intact)"), p.stderr
    assert current_of(s3) == live and answers(capsys, url) == before


def test_a_reader_killed_mid_fetch_leaves_the_cache_to_fetch_again(s3, tmp_path, monkeypatch, capsys):
    url = s3["url"]
    assert main(["ingest", str(EXAMPLES / "ddp"), "-o", url]) == 0
    assert main(["ingest", str(EXAMPLES / "ddp"), "-o", str(tmp_path / "local")]) == 0
    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "reader-cache"))
    _killed(6, "report", url, "summary", op="get_file")  # 6 files of the version downloaded, then killed
    import tracekit

    run = tracekit.open(url)  # the half download is never read: fetched again, whole
    _, rest = live_version(s3)
    assert run.fetched["files"] == len(rest) and run.fetched["bytes"] == sum(rest.values())
    run.close()
    assert answers(capsys, url) == answers(capsys, tmp_path / "local")


def test_two_writers_at_once_leave_one_whole_run(s3, tmp_path, capsys, monkeypatch):
    """Two ingests into one run started together (whether their uploads overlap is up to the scheduler): the
    run answers as one of the two, whole, never a mix."""
    url = s3["url"]
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    procs = {name: subprocess.Popen([sys.executable, "-m", "tracekit.cli.main", "ingest", str(EXAMPLES / name), "-o",
                                     url], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in ("ddp", "tp")}
    for p in procs.values():
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    for name in procs:
        assert main(["ingest", str(EXAMPLES / name), "-o", str(tmp_path / name)]) == 0
    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "reader-cache"))  # read as another machine would
    got = answers(capsys, url)
    assert got in (answers(capsys, tmp_path / "ddp"), answers(capsys, tmp_path / "tp"))  # one of them, whole


def test_a_reduce_killed_mid_upload_leaves_the_earlier_run(s3, capsys):
    url = s3["url"]
    from tracekit.ingestion.rank_part import make_part

    for f in traces_of(EXAMPLES / "ddp"):
        make_part(str(f), url)
    assert main(["ingest", "--reduce", url]) == 0
    before, live = answers(capsys, url), current_of(s3)
    _killed(5, "ingest", "--reduce", url)  # the parts fetched, reduced, 5 files of the version uploaded: killed
    half = {k.split("/")[1] for k in objects(s3, "versions/")} - {live}
    assert len(half) == 1 and len(objects(s3, f"versions/{half.pop()}/")) == 5  # (its 5 files, no manifest)
    assert current_of(s3) == live and answers(capsys, url) == before
