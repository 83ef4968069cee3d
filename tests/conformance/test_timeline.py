"""tracekit timeline on the 8-rank DLRM job: valid JSON Object Format, every rank a process with its
kernels, the added tracks, and tracekit can ingest it back."""

import gzip
import json

import tracekit
from tests.conftest import live, shared_traces
from tracekit.cli.main import main


def test_dlrm_timeline_has_every_rank_and_the_added_tracks(tmp_path):
    d = shared_traces() / "param_dlrm_kineto_8rank"
    kernels = {}  # per rank, the kernels the raw traces hold
    for f in sorted(d.glob("*.json")):
        doc = json.loads(f.read_text())
        kernels[doc["distributedInfo"]["rank"]] = sum(1 for e in doc["traceEvents"]
                                                      if e.get("ph") == "X" and e.get("cat") == "kernel")
    run = tracekit.ingest([d], tmp_path / "run", jobs=2)
    out = tmp_path / "job.json.gz"
    assert main(["timeline", str(tmp_path / "run"), "-o", str(out)]) == 0
    doc = json.loads(gzip.decompress(out.read_bytes()))  # valid JSON, Object Format
    evs = doc["traceEvents"]
    names = {(e["pid"], e["args"]["name"]) for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    for r in range(8):
        assert (r, "tracekit: exposed communication") in names and (r, "tracekit: collective instances") in names
        got = sum(1 for e in evs if e["ph"] == "X" and e["pid"] == r and e.get("cat") == "kernel")
        assert got == kernels[r], r
    (n_clean,) = run.con.execute("SELECT count(*) FROM collective_instances WHERE status = 'clean'").fetchone()
    slices = [e for e in evs if e["ph"] == "X" and e["tid"] == 900002]
    assert len(slices) == 8 * n_clean == 64
    assert sum(1 for e in evs if e["ph"] == "s") == sum(1 for e in evs if e["ph"] == "f") == 7 * n_clean
    back = tracekit.ingest([out], tmp_path / "back", jobs=1)
    assert back.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": len(evs)}]
    assert back.sql("SELECT count(*) AS n FROM gpu_kernels WHERE cat = 'kernel'").to_pylist() == \
        [{"n": sum(kernels.values())}]


def test_kernels_only_and_a_step_range(tmp_path):
    d = shared_traces() / "hta_nccl_parser_config"
    run = tracekit.ingest([d], tmp_path / "run", jobs=1)
    out = tmp_path / "one.json"
    assert main(["timeline", str(tmp_path / "run"), "-o", str(out), "--steps", "5:5", "--kernels-only"]) == 0
    evs = json.loads(out.read_text())["traceEvents"]
    (n,) = run.con.execute("SELECT count(*) FROM gpu_kernels WHERE step = 5 AND kind IN ('comm', 'compute')").fetchone()
    assert sum(1 for e in evs if e["ph"] == "X" and e.get("cat") == "kernel") == n > 0
    assert not [e for e in evs if e["ph"] == "X" and e.get("cat") == "cpu_op"]


def test_a_rank_range_holds_those_ranks_events_and_no_other(tmp_path):
    # --ranks 2:3 reads ranks 2 and 3 (their own events files): every CPU-side complete event and every
    # kernel their raw traces hold, and nothing of another rank
    d = shared_traces() / "param_dlrm_kineto_8rank"
    cpu, kernels = {}, {}
    for f in sorted(d.glob("*.json")):
        doc = json.loads(f.read_text())
        r = doc["distributedInfo"]["rank"]
        xs = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
        cpu[r] = sum(1 for e in xs if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"))
        kernels[r] = sum(1 for e in xs if e.get("cat") == "kernel")
    tracekit.ingest([d], tmp_path / "run", jobs=2)
    out = tmp_path / "two.json"
    assert main(["timeline", str(tmp_path / "run"), "-o", str(out), "--ranks", "2:3"]) == 0
    evs = json.loads(out.read_text())["traceEvents"]
    assert {e["pid"] for e in evs} == {2, 3}
    for r in (2, 3):
        mine = [e for e in evs if e["ph"] == "X" and e["pid"] == r and e["tid"] < 900000]
        assert sum(1 for e in mine if e["tid"] >= 200000) == cpu[r] > 0, r
        assert sum(1 for e in mine if e.get("cat") == "kernel") == kernels[r] > 0, r


def test_a_few_ranks_and_the_reports_read_no_other_ranks_events(tmp_path):
    # what a timeline of ranks 2-3 writes, and the summary, are the same once every other rank's events
    # files are gone (neither lists nor reads them); with no events file at all the summary still answers
    # from the stored facts (binding the events view listed every rank's folder: 0.1 s at 4,096 ranks), and so
    # do identity and the HTML page
    import shutil

    from tracekit.layout.paths import rank_dir
    d = shared_traces() / "param_dlrm_kineto_8rank"
    run = tracekit.ingest([d], tmp_path / "run", jobs=2)
    path = str(live(tmp_path / "run"))
    summary = run.sql("SELECT * FROM comm_overlap ORDER BY ALL").to_pylist()
    run.close()
    assert main(["timeline", str(tmp_path / "run"), "-o", str(tmp_path / "a.json"), "--ranks", "2:3"]) == 0
    for r in (0, 1, 4, 5, 6, 7):
        shutil.rmtree(rank_dir(path, r))
    assert main(["timeline", str(tmp_path / "run"), "-o", str(tmp_path / "b.json"), "--ranks", "2:3"]) == 0
    assert (tmp_path / "b.json").read_bytes() == (tmp_path / "a.json").read_bytes()
    for r in (2, 3):
        shutil.rmtree(rank_dir(path, r))
    again = tracekit.open(tmp_path / "run")
    assert again.sql("SELECT * FROM comm_overlap ORDER BY ALL").to_pylist() == summary
    assert tracekit.report(again, "summary").num_rows == 8
    # identity (its events count is traces.event_count) and the page read no events either
    from tracekit.commands.html import write_html
    ident = {r["item"]: r["value"] for r in tracekit.report(again, "identity").to_pylist()}
    raw = sum(len(json.loads(f.read_text())["traceEvents"]) for f in d.glob("*.json"))
    assert ident["events"] == f"{raw:,}"  # every event of the 8 traces
    write_html(again, str(tmp_path / "page.html"))


def test_events_and_the_views_are_named_in_any_case(tmp_path):
    # DuckDB matches names in any case, quoted or not: a user's EVENTS, "Events" or COLLECTIVES binds the
    # view as events does (events is bound when a query names it; EVENTS failed: no table named EVENTS)
    d = shared_traces() / "hta_trace_filter_2rank"
    raw = sum(len(json.loads(gzip.open(f).read())["traceEvents"]) for f in sorted(d.glob("*.json.gz")))
    run = tracekit.ingest([d], tmp_path / "run", jobs=2)
    run.close()
    for query in ("SELECT count(*) AS n FROM EVENTS", 'SELECT count(*) AS n FROM "Events"',
                  "DESCRIBE EVENTS", "SELECT count(*) AS n FROM Main.Events"):
        fresh = tracekit.open(tmp_path / "run")
        rows = fresh.sql(query).to_pylist()
        if query.startswith("DESCRIBE"):
            assert "rank" in [r["column_name"] for r in rows]
        else:
            assert rows == [{"n": raw}], query
        assert fresh.execute(query).fetchall()
    fresh = tracekit.open(tmp_path / "run")
    assert fresh.sql("SELECT count(*) AS n FROM COLLECTIVES").to_pylist() == \
        tracekit.open(tmp_path / "run").sql("SELECT count(*) AS n FROM collectives").to_pylist()


def test_the_views_over_events_answer_on_a_fresh_run(tmp_path):
    # counters, flows and thread_names read events: each asked first on a freshly opened run binds it
    # (they did not declare it: no table named events). Their rows as the raw traces hold them: one
    # thread_names row per 'M' event, one flows row per 's' event (each its own flow id), one counters row
    # per series of a 'C' event (these traces have none)
    d = shared_traces() / "param_dlrm_kineto_8rank"
    evs = [e for f in sorted(d.glob("*.json")) for e in json.loads(f.read_text())["traceEvents"]]
    raw = {"thread_names": sum(1 for e in evs if e.get("ph") == "M"),
           "flows": sum(1 for e in evs if e.get("ph") == "s"),
           "counters": sum(len(e.get("args", {})) for e in evs if e.get("ph") == "C")}
    assert raw["thread_names"] == 336 and raw["flows"] == 2116
    run = tracekit.ingest([d], tmp_path / "run", jobs=2)
    run.close()
    for view, n in raw.items():
        assert tracekit.open(tmp_path / "run").sql(f"SELECT count(*) AS n FROM {view}").to_pylist() == [{"n": n}]
