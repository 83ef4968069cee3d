"""A run whose own files were cut short or removed by hand: every command that reads them says so in one
line naming the file and what to do (never 'internal error', exit 70), and `ingest --rederive` refuses,
leaving the run's current version as it was, rather than deriving facts from what is left."""

import shutil

import pytest

from tests.cli.test_bad_inputs import _two_rank_run
from tests.conftest import dist, live, write_trace
from tracekit.cli.main import main

AGAIN = ": a file of the run was changed or removed since tracekit wrote it; ingest the traces again with --force\n"


def _cut_short(path):
    path.write_bytes(path.read_bytes()[:100])


def _run_cli(capsys, *args):
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert code != 70 and "internal error" not in err and "\\n" not in err, err
    return code, out, err


def _both_ranks_answer(capsys, run):
    code, out, err = _run_cli(capsys, "report", run, "summary", "--format", "csv", "--columns", "rank,steps")
    assert (code, out) == (0, "rank,steps\n0,2\n1,2\n"), err


@pytest.mark.parametrize("table, words", [("traces", "its traces table"),
                                          ("process_groups", "its process groups table")])
def test_rederive_names_a_table_cut_short(tmp_path, capsys, table, words):
    """It ended in 'internal error: ArrowInvalid: Parquet magic bytes not found in footer', exit 70."""
    run = _two_rank_run(tmp_path)
    _both_ranks_answer(capsys, run)
    before = live(run)
    _cut_short(before / f"{table}.parquet")
    code, _, err = _run_cli(capsys, "ingest", "--rederive", run)
    assert code == 4 and err.startswith(f"error: {run}: {words} cannot be read ({table}.parquet: Parquet magic "
                                        "bytes not found in footer"), err
    assert err.endswith(AGAIN) and len(err.splitlines()) == 1
    assert live(run) == before


def test_rederive_names_a_table_removed(tmp_path, capsys):
    """It said 'cannot write its facts (Failed to open local file ...)', as if the disk were full."""
    run = _two_rank_run(tmp_path)
    (live(run) / "traces.parquet").unlink()
    code, _, err = _run_cli(capsys, "ingest", "--rederive", run)
    assert code == 4 and err.startswith(f"error: {run}: its traces table cannot be read (") and err.endswith(AGAIN)
    assert "traces.parquet" in err and "cannot write" not in err


@pytest.mark.parametrize("command", [
    ["ingest", "--rederive", "{run}"], ["sql", "{run}", "select count(*) from events"],
    ["timeline", "{run}", "-o", "{tmp}/t.json.gz"], ["report", "{run}", "critical_path"]])
def test_an_events_file_cut_short_is_named(tmp_path, capsys, command):
    """Each ended in 'internal error: InvalidInputException: ... No magic bytes found ...\\n\\nLINE 1: ...'."""
    run = _two_rank_run(tmp_path)
    before = live(run)
    _cut_short(before / "events" / "rank=0" / "part-0.parquet")
    code, _, err = _run_cli(capsys, *[w.format(run=run, tmp=tmp_path) for w in command])
    assert code == 4 and err.startswith(f"error: {run}: its events cannot be read ("), err
    assert "'events/rank=0/part-0.parquet'" in err and err.endswith(AGAIN) and len(err.splitlines()) == 1
    assert live(run) == before


def test_rederive_refuses_a_rank_without_its_events(tmp_path, capsys):
    """It derived the facts of rank 1 alone and said it had succeeded: summary then showed rank 1 only.
    Refused, the run's version is the one it was, and it still answers for both ranks."""
    run = _two_rank_run(tmp_path)
    before = live(run)
    shutil.rmtree(before / "events" / "rank=0")
    code, out, err = _run_cli(capsys, "ingest", "--rederive", run)
    assert code == 4 and out == "", out
    assert err == (f"error: {run}: the events of rank 0 are missing ({before / 'events' / 'rank=0'}); its facts "
                   "cannot be derived again without them, and the run is unchanged: ingest the traces again with "
                   "--force\n")
    assert live(run) == before
    _both_ranks_answer(capsys, run)


def test_doctor_names_the_usual_steps_of_ranks_that_have_steps(tmp_path, capsys):
    """Ranks without a ProfilerStep, the most, made the usual step set the empty one: 'step sets differ: 3 ranks
    profiled other steps than the rest ()'. Those ranks are said once, as 'no ProfilerStep'; the step
    sets are compared among the ranks that have steps."""
    from tests.tracegen import cpu_op, step
    d = tmp_path / "t"
    d.mkdir()
    steps = {0: [], 1: [], 2: [], 3: [1, 2], 4: [1, 2], 5: [1]}
    for r, ns in steps.items():
        evs = [cpu_op("op", 5000, 10)] + [step(n, n * 1000, 1000) for n in ns]
        write_trace(d / f"rank{r}.json", evs, header=dist(r, world=len(steps)))
    assert main(["ingest", str(d), "-o", str(tmp_path / "run")]) == 0
    code, out, err = _run_cli(capsys, "doctor", tmp_path / "run", "--format", "csv")
    assert code == 0 and "the rest ()" not in out, out
    assert ',warning,5,"1 rank profiled other steps than the rest (1,2)",' in out
    assert ',warning,"0,1,2",3 ranks have no ProfilerStep' in out


@pytest.mark.parametrize("damage", ["cut short", "removed"])
def test_doctor_says_the_events_are_damaged(tmp_path, capsys, damage):
    """Doctor left its replay out without a word and said 'ok: all' of a run whose events were cut short or
    a rank's removed (where cut short: 'internal error', exit 70)."""
    run = _two_rank_run(tmp_path)
    if damage == "cut short":
        _cut_short(live(run) / "events" / "rank=0" / "part-0.parquet")
    else:
        shutil.rmtree(live(run) / "events" / "rank=0")
    code, out, err = _run_cli(capsys, "doctor", run, "--format", "csv", "--fail-on", "warning")
    (row,) = [line for line in out.splitlines() if line.startswith("damaged run,warning,,")]
    assert code == 6 and "events/rank=0" in row and row.endswith(",ingest the traces again with --force"), out


@pytest.mark.parametrize("damage", ["version manifest {}", "top manifest {}, no marker, no CURRENT",
                                    "marker garbage, no CURRENT"])
@pytest.mark.parametrize("command", [["report", "{run}", "summary"], ["sql", "{run}", "SELECT 1"]])
def test_a_run_with_an_unreadable_manifest_is_named_damaged_not_a_trace(tmp_path, capsys, damage, command):
    """A directory with tracekit's names (tracekit-run.json, versions/v-...) whose manifest cannot be read was
    read as traces: 'manifest.json: ... not a Chrome/Kineto trace'. It is a damaged run, and the line says so
    and what to do."""
    run = _two_rank_run(tmp_path)
    if damage == "version manifest {}":
        (live(run) / "manifest.json").write_text("{}")
    elif damage.startswith("top manifest"):
        (run / "tracekit-run.json").unlink()
        (run / "CURRENT").unlink()
        (run / "manifest.json").write_text("{}")
    else:
        (run / "tracekit-run.json").write_text("garbage")
        (run / "CURRENT").unlink()
    code, out, err = _run_cli(capsys, *[a.format(run=run) for a in command])
    assert code != 0 and out == "" and err.count("\n") == 1
    assert err.startswith(f"error: {run}: a ") and "tracekit run" in err and "damaged" in err
    assert "ingest the traces again, into it with --force or into a new directory" in err
    assert "traceEvents" not in err and "not a tracekit run" not in err
