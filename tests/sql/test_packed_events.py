"""The events of many small ranks packed into few files (tracekit/pack_events.py; issue 40, item 5: 10,000
ranks of one event each spent minutes of each command opening a file per rank). Packing is forced here on
a few ranks (PACK_MIN_RANKS), and the reports must still give the hand-worked and planted figures of
tests/sql/test_breakdown.py and tests/cli/test_planted.py (their expected values come from the events'
times and the generator's constants, not from tracekit); on the synthetic job, every report, the
timeline and the facts derived again rank by rank from the packed files are those of the same traces
with a folder per rank (the layout whose figures the rest of the suite checks)."""

import json
import os
import shutil

import pytest

import tests.cli.test_planted as planted
import tests.sql.test_breakdown as hand
import tracekit
import tracekit.ingestion.rederive
import tracekit.pack_events
from benchmarks import synth_traces as synth
from tests.cli.test_rank_parts import answers
from tests.conftest import live
from tracekit.cli.main import main


def pack_from(monkeypatch, ranks: int) -> None:
    monkeypatch.setattr(tracekit.pack_events, "PACK_MIN_RANKS", ranks)


def layout(run) -> list[str]:
    return sorted(os.listdir(live(run) / "events"))


def test_the_hand_worked_breakdown_from_packed_events(tmp_path, monkeypatch):
    pack_from(monkeypatch, 2)
    hand.test_a_hand_worked_timeline(tmp_path)
    assert layout(tmp_path / "run") == ["packed"]
    assert os.listdir(live(tmp_path / "run") / "events" / "packed") == ["ranks-0000000-0000001.parquet"]


def test_the_planted_slow_op_from_packed_events(tmp_path, monkeypatch):
    pack_from(monkeypatch, 2)
    planted.test_the_straggler_explanation_names_the_planted_slow_op(tmp_path)
    assert layout(tmp_path / "run-slow") == ["packed"]


def test_a_run_below_the_threshold_keeps_a_folder_per_rank(tmp_path, monkeypatch):
    pack_from(monkeypatch, 3)
    hand.test_a_hand_worked_timeline(tmp_path)  # 2 ranks
    assert layout(tmp_path / "run") == ["rank=0", "rank=1"]


def test_a_large_rank_keeps_its_folder(tmp_path, monkeypatch):
    pack_from(monkeypatch, 2)
    monkeypatch.setattr(tracekit.pack_events, "PACK_RANK_BYTES", 0)  # every rank is "large"
    hand.test_a_hand_worked_timeline(tmp_path)
    assert layout(tmp_path / "run") == ["rank=0", "rank=1"]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """8 ranks on 2 hosts whose clocks differ, a slow rank: ingested with a folder per rank."""
    d = tmp_path_factory.mktemp("synth")
    synth.main(["--ranks", "8", "--plan", "tp2-pp2-dp2", "--steps", "2", "--gpus-per-host", "4",
                "--clock-offset-us", "300", "--end-jitter-us", "1", "--slow-rank", "5", "-o", str(d / "traces")])
    assert main(["ingest", str(d / "traces"), "-o", str(d / "folders"), "--no-progress"]) == 0
    assert layout(d / "folders")[0] == "rank=0"
    return d


def timeline(capsys, run, out) -> str:
    """The timeline of ranks 0-7 (given ranks: without the critical path's track, which names one of tied
    ranks at random)."""
    assert main(["timeline", str(run), "-o", str(out), "--ranks", "0:7"]) == 0
    capsys.readouterr()
    return out.read_text()


def test_packed_events_answer_as_a_folder_per_rank(job, tmp_path, capsys, monkeypatch):
    pack_from(monkeypatch, 2)
    run = tmp_path / "packed"
    assert main(["ingest", str(job / "traces"), "-o", str(run), "--no-progress"]) == 0
    assert layout(run) == ["packed"]
    assert answers(capsys, run) == answers(capsys, job / "folders")
    assert timeline(capsys, run, tmp_path / "a.json") == timeline(capsys, job / "folders", tmp_path / "b.json")
    assert main(["timeline", str(run), "-o", str(tmp_path / "s.json"), "--ranks", "2:5", "--steps", "1"]) == 0
    assert main(["timeline", str(job / "folders"), "-o", str(tmp_path / "t.json"), "--ranks", "2:5",
                 "--steps", "1"]) == 0
    events = json.loads((tmp_path / "s.json").read_text())["traceEvents"]
    assert {e["pid"] for e in events} == {2, 3, 4, 5}
    assert events == json.loads((tmp_path / "t.json").read_text())["traceEvents"]


def test_facts_derived_again_rank_by_rank_from_packed_events(job, tmp_path, capsys, monkeypatch):
    pack_from(monkeypatch, 2)
    run = tmp_path / "packed"
    assert main(["ingest", str(job / "traces"), "-o", str(run), "--no-progress"]) == 0
    monkeypatch.setattr(tracekit.ingestion.rederive, "SMALL_RUN_BYTES", 0)  # each rank's facts from its rows
    assert main(["ingest", "--rederive", str(run)]) == 0
    assert layout(run) == ["packed"]
    assert answers(capsys, run) == answers(capsys, job / "folders")


def test_a_packed_file_removed_by_hand_is_said(job, tmp_path, capsys, monkeypatch):
    pack_from(monkeypatch, 2)
    run = tmp_path / "packed"
    assert main(["ingest", str(job / "traces"), "-o", str(run), "--no-progress"]) == 0
    shutil.rmtree(live(run) / "events" / "packed")
    capsys.readouterr()
    assert main(["report", str(run), "replay", "--format", "csv"]) != 0
    err = capsys.readouterr().err
    assert "the events of rank 0 are missing" in err and "Traceback" not in err
