"""A run made of rank parts (issue 39): each rank's part made from its trace as the profiler's handler makes
it (python -m tracekit.ingestion.rank_part: events and per-rank facts, complete or absent), then
`tracekit ingest --reduce RUN` doing the cross-rank work only. The oracle is a central `tracekit ingest` of
the same traces (another code path: the map in a pool, a small run derived whole), report by report, and for
the missing ranks the traces' own distributedInfo."""

import json
import os
import pathlib
import signal
import subprocess
import sys

import pytest

from benchmarks import synth_traces as synth
from tracekit.cli.main import main
from tracekit.ingestion.rank_part import make_part
from tracekit.reports import REGISTRY

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "traces"


def answers(capsys, run) -> dict:
    """Every report of ``run`` as JSON rows, with its exit code. Rows are compared as a multiset: where rows tie
    on a report's order (exposed's send and recv of one group) their order varies from one central ingest of
    the same traces to the next; the rows themselves do not. critical_path's rows keep their ranks: where
    ranks tie (the synthetic job's ranks of a group run in step), the path takes the edge and the last node
    of the smallest id, whatever the order of the run's rows (it named one rank or another with the layout)."""
    out = {}
    for name in REGISTRY:
        capsys.readouterr()
        code = main(["report", str(run), name, "--format", "json"])
        out[name] = (code, rows_of(name, code, capsys.readouterr().out))
    return out


def rows_of(name: str, code: int, text: str):
    if code != 0:
        return text
    rows = json.loads(text)
    return sorted(json.dumps(row, sort_keys=True) for row in rows)


def traces_of(d) -> list[pathlib.Path]:
    return sorted(pathlib.Path(d).rglob("*.json.gz"))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """8 ranks on 2 hosts whose clocks differ (so the reduce aligns them), a slow rank, two link kinds."""
    d = tmp_path_factory.mktemp("synth") / "iteration_5"
    synth.main(["--ranks", "8", "--plan", "tp2-pp2-dp2", "--steps", "2", "--gpus-per-host", "4",
                "--clock-offset-us", "300", "--clock-drift-ppm", "5", "--end-jitter-us", "1", "--two-links",
                "--slow-rank", "5", "-o", str(d)])
    return d


@pytest.mark.parametrize("source", ["ddp", "tp", "synthetic"])
def test_a_run_of_rank_parts_answers_every_report_as_a_central_ingest(source, synthetic, tmp_path, capsys):
    traces = synthetic if source == "synthetic" else EXAMPLES / source
    files = traces_of(traces)
    assert len(files) == (8 if source == "synthetic" else 2)
    assert main(["ingest", str(traces), "-o", str(tmp_path / "central")]) == 0
    for f in files:  # each as its rank's handler would, on its own host
        make_part(str(f), str(tmp_path / "parts"))
    capsys.readouterr()
    assert main(["ingest", "--reduce", str(tmp_path / "parts")]) == 0
    said = capsys.readouterr()
    assert f"{len(files)} ranks of {len(files)} reduced" in said.out and said.err == ""
    central, parts = answers(capsys, tmp_path / "central"), answers(capsys, tmp_path / "parts")
    assert sum(code == 0 for code, _ in central.values()) >= 10  # the reports these traces answer
    for name in REGISTRY:
        assert parts[name] == central[name], name


def test_missing_ranks_are_said_and_a_late_part_is_taken_in(synthetic, tmp_path, capsys):
    files = traces_of(synthetic)
    run = tmp_path / "run"
    for f in files[:5]:  # ranks 0-4 (rank{r}_trace: the names sort by rank below 10)
        make_part(str(f), str(run))
    capsys.readouterr()
    assert main(["ingest", "--reduce", str(run)]) == 0
    said = capsys.readouterr()
    assert "5 ranks of 8 reduced" in said.out  # the world size from the traces' distributedInfo
    assert "no part yet of 3 ranks (5-7)" in said.err
    assert main(["report", str(run), "doctor", "--format", "json"]) == 0
    doctor = {r["check"]: r for r in json.loads(capsys.readouterr().out)}
    assert doctor["missing ranks"]["ranks"] == "5,6,7"
    # what takes them in here: their parts and a reduce (there is no trace of theirs to ingest in this run)
    assert doctor["missing ranks"]["finding"] == "3 of 8 ranks of the world have no part in this run"
    fix = doctor["missing ranks"]["fix"]
    assert "python -m tracekit.ingestion.rank_part TRACE RUN" in fix and "tracekit ingest --reduce RUN" in fix
    assert "ingest every rank's trace" not in fix
    for f in files[5:]:  # late
        make_part(str(f), str(run))
    assert main(["ingest", "--reduce", str(run)]) == 0
    assert "8 ranks of 8 reduced" in capsys.readouterr().out
    assert main(["ingest", str(synthetic), "-o", str(tmp_path / "central")]) == 0
    assert answers(capsys, run) == answers(capsys, tmp_path / "central")


def test_parts_without_their_finish_tables_answer_as_a_central_ingest(synthetic, tmp_path, capsys):
    """A part keeps the finish's per-rank tables (the timeline's sweep, why_late's lead-ups) for the reduce
    to read, and its tables in one file (tables.arrows); a part without them (made by an earlier tracekit
    of the same rules, or one whose sweep ran out of memory beside training) is reduced from its Parquet
    facts as before, beside parts that have them."""
    files = traces_of(synthetic)
    run = tmp_path / "run"
    for f in files:
        make_part(str(f), str(run))
    parts = sorted((run / "parts" / "iteration_5").glob("rank-*"))
    assert len(parts) == 8 and all(sorted(p.name for p in (d / "finish").iterdir()) ==
                                   ["_lead_up_parts.parquet", "_lead_ups.parquet", "_step_pieces.parquet",
                                    "_step_segments.parquet"] for d in parts)
    for d in parts[:3]:  # ranks 0-2 as an earlier tracekit made them
        doc = json.loads((d / "part.json").read_text())
        del doc["finish"], doc["tables"]
        (d / "part.json").write_text(json.dumps(doc))
        (d / "tables.arrows").unlink()
        for f in (d / "finish").iterdir():
            f.unlink()
        (d / "finish").rmdir()
    capsys.readouterr()
    assert main(["ingest", "--reduce", str(run)]) == 0
    assert "8 ranks of 8 reduced" in capsys.readouterr().out
    assert main(["ingest", str(synthetic), "-o", str(tmp_path / "central")]) == 0
    assert answers(capsys, run) == answers(capsys, tmp_path / "central")


def _reduced(traces, tmp_path) -> tuple[pathlib.Path, list[str]]:
    """A run of the parts of ``traces``, reduced once; its versions then."""
    run = tmp_path / "run"
    for f in traces_of(traces):
        make_part(str(f), str(run))
    assert main(["ingest", "--reduce", str(run)]) == 0
    return run, sorted(p.name for p in (run / "versions").iterdir())


@pytest.mark.parametrize("lost", ["events/part-0.parquet", "facts/comm_ops.parquet"])
def test_a_part_that_lost_a_file_is_refused_in_one_line_and_the_run_kept(synthetic, tmp_path, capsys, lost):
    """A part whose events file or a fact file went (removed by hand, a cleaner) is named with the file and
    what to do; the reduce writes nothing and the run before it stays. The events are placed beside the
    reduce (the cross-rank work does not read them): the error still comes, after it. A fact file matters
    where the part's tables are read from the part (no group joined them, no tables.arrows)."""
    run, before = _reduced(synthetic, tmp_path)
    part = run / "parts" / "iteration_5" / "rank-3"
    doc = json.loads((part / "part.json").read_text())  # as a part without tables.arrows (a big rank's): its
    del doc["tables"]  # Parquet tables read one by one; a part.json written again is a new part (no group has it)
    (part / "part.json").write_text(json.dumps(doc))
    (part / "tables.arrows").unlink()
    (part / lost).unlink()
    capsys.readouterr()
    assert main(["ingest", "--reduce", str(run)]) == 4  # a run's input refused: 4, as every other part refused
    said = capsys.readouterr()
    lines = [line for line in said.err.splitlines() if line.strip()]
    assert len(lines) == 1 and f"a rank part without {part / lost}; make it again from its trace" in lines[0], said.err
    assert "Traceback" not in said.err and "internal error" not in said.err
    assert sorted(p.name for p in (run / "versions").iterdir()) == before
    assert main(["report", str(run), "summary", "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 8


def test_an_events_file_cut_short_is_refused_by_the_reduce_and_named_with_its_fix(synthetic, tmp_path, capsys):
    """A fresh user's report: a part's events file emptied by hand was reduced without a word (the reduce
    reads no events), replacing the good version; then the reports said "ingest the traces again with
    --force", which a run of parts has no traces for. A part now records each events file's size: the reduce
    refuses a file of another size in one line naming it and the command that makes the part again, the run
    kept; a run of parts whose events are damaged names that command too."""
    run, before = _reduced(synthetic, tmp_path)
    events = run / "parts" / "iteration_5" / "rank-3" / "events" / "part-0.parquet"
    size = events.stat().st_size
    trace = json.loads((events.parent.parent / "part.json").read_text())["trace"]["path"]
    with open(events, "r+b") as f:  # cut short in place: the run's version shares the file (a hard link)
        f.truncate(size // 2)
    capsys.readouterr()
    assert main(["ingest", "--reduce", str(run)]) == 4
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and f"{events} is {size // 2:,} bytes, written with {size:,}" in err[0], err
    assert f"make it again from its trace (python -m tracekit.ingestion.rank_part {trace} RUN)" in err[0]
    assert sorted(p.name for p in (run / "versions").iterdir()) == before
    assert main(["report", str(run), "bound"]) != 0  # the version before shares the file cut short
    err = capsys.readouterr().err
    assert "make the rank's part again from its trace (python -m tracekit.ingestion.rank_part TRACE RUN) and " \
           "reduce again (tracekit ingest --reduce RUN)" in err and "--force" not in err


def test_a_reduce_while_another_writes_the_run_says_what_to_do(synthetic, tmp_path, capsys):
    """Two reduces at once: the second is refused in one line; it said "or write elsewhere with another -o",
    which --reduce refuses (it takes one run and no -o)."""
    from tracekit.layout.versions import writer_lock

    run = tmp_path / "run"
    for f in traces_of(synthetic)[:2]:
        make_part(str(f), str(run))
    capsys.readouterr()
    with writer_lock(str(run)):
        assert main(["ingest", "--reduce", str(run)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "another tracekit ingest is writing this run" in err[0]
    assert err[0].endswith("wait for it to finish, then reduce again (a part written meanwhile is taken in)")
    assert main(["ingest", "--reduce", str(run)]) == 0  # once it is done


_KILL_MID_PART = """
import os, signal, sys
import tracekit.derive as derive
from tracekit.ingestion import rank_part
def die(*a, **k):  # the events are written, the facts not yet: a kill -9 then
    os.kill(os.getpid(), signal.SIGKILL)
derive.derive_rank = die
rank_part.make_part(sys.argv[1], sys.argv[2])
"""


def test_a_part_writer_killed_midway_leaves_no_part(tmp_path, capsys):
    files = traces_of(EXAMPLES / "ddp")
    run = tmp_path / "run"
    make_part(str(files[0]), str(run))
    p = subprocess.run([sys.executable, "-c", _KILL_MID_PART, str(files[1]), str(run)], capture_output=True)
    assert p.returncode == -signal.SIGKILL
    cycle = run / "parts" / "iteration_3"
    assert sorted(os.listdir(cycle)) == ["rank-0"]  # rank 1's half-made part is not one
    assert [e for e in os.listdir(run / "parts") if e.startswith(".tmp-")]  # (its scratch, events written)
    from tracekit.layout.versions import lock_exclusive
    (run / "parts" / ".tmp-live").mkdir()  # a writer still at work holds its scratch
    live = lock_exclusive(str(run / "parts" / ".tmp-live"))
    capsys.readouterr()
    try:
        assert main(["ingest", "--reduce", str(run)]) == 0
    finally:
        os.close(live)
    said = capsys.readouterr()
    assert "1 rank of 2 reduced" in said.out and "no part yet of 1 rank (1)" in said.err
    # the dead writer's scratch removed under the lock, the living one's kept
    assert sorted(os.listdir(run / "parts")) == [".tmp-live", "iteration_3"]
    assert main(["sql", str(run), "SELECT DISTINCT rank FROM events", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"rank": 0}]


def test_opening_parts_not_yet_reduced_says_how_to_build_the_run(tmp_path, capsys):
    make_part(str(traces_of(EXAMPLES / "ddp")[0]), str(tmp_path / "run"))
    capsys.readouterr()
    assert main(["report", str(tmp_path / "run"), "summary"]) == 4
    assert f"`tracekit ingest --reduce {tmp_path / 'run'}`" in capsys.readouterr().err


def test_several_cycles_need_one_chosen(tmp_path, capsys):
    run = tmp_path / "run"
    for f in traces_of(EXAMPLES / "ddp"):
        make_part(str(f), str(run), iteration=3)
        make_part(str(f), str(run), iteration=7)
    capsys.readouterr()
    assert main(["ingest", "--reduce", str(run)]) == 4
    err = capsys.readouterr().err
    assert "iteration_3 (2 ranks), iteration_7 (2 ranks)" in err and "--iteration N" in err
    assert main(["ingest", "--reduce", str(run), "--iteration", "7"]) == 0
    assert main(["ingest", "--reduce", str(tmp_path / "nothing")]) == 4
    assert "no rank parts" in capsys.readouterr().err
    assert not (tmp_path / "nothing").exists()  # a refusal makes nothing


def test_a_part_is_never_written_into_a_directory_that_is_not_a_run(tmp_path):
    mine = tmp_path / "results"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    trace = traces_of(EXAMPLES / "ddp")[0]
    p = subprocess.run([sys.executable, "-m", "tracekit.ingestion.rank_part", str(trace), str(mine)],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert f"{mine}: exists, is not empty and is not a tracekit run" in p.stderr and str(trace) in p.stderr
    assert os.listdir(mine) == ["notes.txt"]


def test_a_full_disk_is_one_line_and_leaves_no_part_and_the_earlier_run(tmp_path, capsys, monkeypatch):
    import errno

    import tracekit.ingestion.rank_part as rank_part
    import tracekit.ingestion.reduce_parts as reduce_parts

    files = traces_of(EXAMPLES / "ddp")
    run = tmp_path / "run"
    make_part(str(files[0]), str(run))
    assert main(["ingest", "--reduce", str(run)]) == 0
    before = (run / "CURRENT").read_text()

    def full(*a, **k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(run / "parts" / "x"))

    monkeypatch.setattr(rank_part.os, "rename", full)  # the part's last step, renaming it into place
    capsys.readouterr()
    assert rank_part.main([str(files[1]), str(run)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"tracekit: the rank part of {files[1]} in {run} was not made: No space left on device")
    assert "Traceback" not in err
    monkeypatch.undo()
    assert sorted(os.listdir(run / "parts")) == ["iteration_3"]  # no scratch left, and no part of rank 1
    assert os.listdir(run / "parts" / "iteration_3") == ["rank-0"]
    make_part(str(files[1]), str(run))
    monkeypatch.setattr(reduce_parts, "reduce_run", full)
    assert main(["ingest", "--reduce", str(run)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot write the run {run}: No space left on device") and "intact" in err
    assert (run / "CURRENT").read_text() == before  # the earlier run (rank 0 alone) still answers
    assert main(["sql", str(run), "SELECT DISTINCT rank FROM events", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"rank": 0}]


def test_the_first_parts_of_a_job_race_for_the_runs_marker(tmp_path):
    """Found by bench_source on 1,024 ranks: a rank's first part found another's marker half written (its
    temporary file, the marker not yet renamed in) and refused the run as not tracekit's."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "tracekit-run.json.tmp-999").write_text('{"format": ')  # another rank's writer, mid-marker
    make_part(str(traces_of(EXAMPLES / "ddp")[0]), str(run))
    assert os.listdir(run / "parts" / "iteration_3") == ["rank-0"]


def test_the_groups_table_is_the_groups_the_parts_wrote(tmp_path):
    """The reduce builds process_groups from each part's groups as JSON text, each distinct list of ranks
    decoded once: the table holds every group of every part, in order, with its own list (a shared list,
    an empty one, none), as the parts wrote them; a group with a field no part writes is refused."""
    import msgspec
    import pyarrow as pa

    from tracekit.errors import RunError
    from tracekit.ingestion.reduce_parts import groups_table

    written = [
        {"rank": 0, "pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": 4,
         "ranks": [0, 1, 2, 3]},
        {"rank": 0, "pg_name": "1", "pg_desc": "TP", "pg_size": 2, "ranks": [0, 1]},
        {"rank": 1, "pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": 4,
         "ranks": [0, 1, 2, 3]},
        {"rank": 1, "pg_name": "2", "pg_size": 0, "ranks": []},
        {"rank": 2, "pg_name": "3", "ranks": None},
        {"rank": 3},
    ]
    table = groups_table([msgspec.Raw(json.dumps(g).encode()) for g in written])
    names = ["rank", "pg_name", "pg_desc", "backend_config", "pg_size", "ranks"]
    assert table.column_names == names and table.schema.field("ranks").type == pa.list_(pa.int64())
    assert table.to_pylist() == [{n: g.get(n) for n in names} for g in written]
    with pytest.raises(RunError, match="process groups cannot be read .*unknown field `pg_rank`"):
        groups_table([msgspec.Raw(b'{"rank": 0, "pg_rank": 3}')])


def _facts_of(d: pathlib.Path, name: str):
    import pyarrow.parquet as pq

    return pq.read_table(d / "facts" / f"{name}.parquet")


def test_the_writer_that_completes_a_group_joins_its_tables_for_the_reduce(synthetic, tmp_path, capsys, monkeypatch):
    """The writer whose part completes a group of ranks joins the group's tables beside the parts; the reduce
    links those files rather than reading every part's tables again, and answers as a central ingest."""
    import pyarrow as pa

    from tracekit.rules import FACTS

    files = traces_of(synthetic)
    run = tmp_path / "run"
    cycle = run / "parts" / "iteration_5"
    for f in files[:7]:
        make_part(str(f), str(run))
    assert not list(cycle.glob("group-*"))  # rank 7 missing: no group yet
    make_part(str(files[7]), str(run))
    group = cycle / "group-0000000-0000007"
    parts = [cycle / f"rank-{r}" for r in range(8)]
    for name in FACTS:  # each table: the parts' own files, rank by rank (read here, not by the code under test)
        joined = _facts_of(group, name)
        assert joined.to_pylist() == pa.concat_tables([_facts_of(p, name) for p in parts]).to_pylist(), name
    capsys.readouterr()
    assert main(["ingest", "--reduce", str(run)]) == 0
    from tracekit.layout.versions import current_version

    version = pathlib.Path(current_version(str(run)))
    for name in FACTS:  # the run's file is the group's (linked), not a compaction of the parts
        assert os.path.samefile(version / "facts" / name / "all.parquet", group / "facts" / f"{name}.parquet")
    assert main(["ingest", str(synthetic), "-o", str(tmp_path / "central")]) == 0
    assert answers(capsys, run) == answers(capsys, tmp_path / "central")
    # the run's traces and process_groups from the group's files (hosts assigned by the reduce, --hosts too)
    # are those the parts' part.json give, the group moved away
    import pyarrow.parquet as pq

    def tables(hosts):
        assert main(["ingest", "--reduce", str(run)] + (["--hosts", hosts] if hosts else [])) == 0
        v = pathlib.Path(current_version(str(run)))
        return [pq.ParquetFile(v / f"{n}.parquet").read().to_pylist() for n in ("traces", "process_groups")]

    from tracekit.ingestion import reduce_parts

    def unread(*a):
        raise AssertionError("a part.json read where its group holds what the reduce reads of it")

    monkeypatch.setattr(reduce_parts, "read_part", unread)
    with_group = [tables(None), tables("2")]
    monkeypatch.undo()
    assert with_group[1][0][5]["host"] == "node2" and with_group[0][0][5]["host"] != "node2"
    (cycle / "group-0000000-0000007").rename(tmp_path / "moved")
    assert [tables(None), tables("2")] == with_group


def test_a_group_whose_parts_changed_is_not_used_and_is_joined_again(synthetic, tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = traces_of(synthetic)
    run = tmp_path / "run"
    cycle = run / "parts" / "iteration_5"
    for f in files:
        make_part(str(f), str(run))
    group = cycle / "group-0000000-0000007"
    rows = sum(_facts_of(cycle / f"rank-{r}", "comm_ops").num_rows for r in range(8))
    assert rows > 0 and _facts_of(group, "comm_ops").num_rows == rows
    # the group as it would be were rank 3's part made again after it: its rows no longer the parts'
    stale = _facts_of(group, "comm_ops")
    pq.write_table(pa.Table.from_pylist([], schema=stale.schema), group / "facts" / "comm_ops.parquet")
    part_json = cycle / "rank-3" / "part.json"
    part_json.write_bytes(part_json.read_bytes() + b" ")  # (another file's identity: its size)
    capsys.readouterr()
    assert main(["ingest", "--reduce", str(run)]) == 0
    capsys.readouterr()
    assert main(["sql", str(run), "SELECT count(*) AS n FROM comm_ops", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"n": rows}]  # the parts' rows, compacted by the reduce
    make_part(str(files[3]), str(run))  # rank 3 made again: its writer completes the group again
    doc = json.loads((group / "group.json").read_text())
    st = os.stat(part_json)
    assert doc["ranks"]["3"] == [st.st_ino, st.st_mtime_ns, st.st_size]
    assert _facts_of(group, "comm_ops").num_rows == rows
    assert not [e for e in os.listdir(run / "parts") if e.startswith(".tmp-")]  # (the old group removed)


def test_a_group_that_cannot_be_joined_leaves_the_part_and_says_so(tmp_path, capsys, monkeypatch):
    import errno

    from tracekit.ingestion import part_tables

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", "group.parquet")

    monkeypatch.setattr(part_tables, "compact_chunk", full)
    run = tmp_path / "run"
    for f in traces_of(EXAMPLES / "ddp"):
        make_part(str(f), str(run))
    err = capsys.readouterr().err
    assert "was not joined (No space left on device (group.parquet)); the reduce joins its parts itself" in err
    assert sorted(os.listdir(run / "parts" / "iteration_3")) == [".group-0000000-0000001.lock", "rank-0", "rank-1"]
    assert not [e for e in os.listdir(run / "parts") if e.startswith(".tmp-")]
    monkeypatch.undo()
    assert main(["ingest", "--reduce", str(run)]) == 0
    assert "2 ranks of 2 reduced" in capsys.readouterr().out


@pytest.mark.parametrize("rank, world, span", [(0, 8, (0, 7)), (300, 4096, (256, 511)), (299, 300, (256, 299)),
                                               (255, 4096, (0, 255)), (3, None, None), (9, 8, None)])
def test_a_ranks_group_is_the_reduces_partition_with_every_rank_present(rank, world, span):
    from tracekit.compact import partition
    from tracekit.ingestion.part_groups import group_span

    assert group_span(rank, world) == span
    if span:  # the reduce cuts a job with every rank present the same way
        assert [c for c in partition(list(range(world))) if rank in c] == [list(range(span[0], span[1] + 1))]


def test_a_group_is_used_only_as_the_reduce_saw_its_parts_and_whole(synthetic, tmp_path, capsys, monkeypatch):
    """A group joined again after the reduce looked at the parts (a part made again meanwhile) is not linked
    beside the parts' older rows; a group whose file was truncated, or whose group.json is not one, is left
    alone and the reduce compacts the parts; a writer that cannot take the group's lock gives it up."""
    from tracekit.ingestion import part_groups
    from tracekit.layout.paths import list_parts
    from tracekit.rules import FACTS, part_key

    files = traces_of(synthetic)
    run = tmp_path / "run"
    cycle = run / "parts" / "iteration_5"
    for f in files:
        make_part(str(f), str(run))
    parts = list_parts(str(run))[5]
    seen = {str(r): part_groups.identity(d) for r, d in parts.items()}
    chunk = sorted(parts)
    assert part_groups.usable_group(parts, chunk, part_key(), FACTS, seen)
    make_part(str(files[3]), str(run))  # rank 3 again: its writer joins the group again, of its new part
    assert part_groups.usable_group(parts, chunk, part_key(), FACTS, seen) is None
    outs = {n: str(tmp_path / f"{n}.parquet") for n in FACTS}
    assert not part_groups.link_group(parts, chunk, FACTS, [], outs, part_key(), seen)
    assert not any(os.path.exists(p) for p in outs.values())

    rows = sum(_facts_of(cycle / f"rank-{r}", "comm_ops").num_rows for r in range(8))
    group = cycle / "group-0000000-0000007"

    def reduced_rows() -> int:
        capsys.readouterr()
        assert main(["ingest", "--reduce", str(run)]) == 0
        capsys.readouterr()
        assert main(["sql", str(run), "SELECT count(*) AS n FROM comm_ops", "--format", "json"]) == 0
        return json.loads(capsys.readouterr().out)[0]["n"]

    with open(group / "facts" / "comm_ops.parquet", "r+b") as f:
        f.truncate(200)
    assert reduced_rows() == rows
    doc = json.loads((group / "group.json").read_text())
    (group / "group.json").write_text(json.dumps(dict(doc, finish=5)))
    assert reduced_rows() == rows

    monkeypatch.setattr(part_groups, "LOCK_WAIT_S", 0.2)
    import fcntl

    held = os.open(cycle / ".group-0000000-0000007.lock", os.O_RDWR)
    fcntl.flock(held, fcntl.LOCK_EX)  # another writer holds the group
    try:
        capsys.readouterr()
        make_part(str(files[4]), str(run))
    finally:
        os.close(held)
    err = capsys.readouterr().err
    assert "was not joined (another writer held the group's lock for 0 s); the reduce joins its parts itself" in err
    assert reduced_rows() == rows
