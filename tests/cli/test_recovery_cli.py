"""The command line finds a run that an ingest killed mid-swap left beside its place, as tracekit.open
does (click checked that the path exists before anything could put it back). Issue 20, item 12."""

import os
import shutil

import pytest

from tests.conftest import dist, write_trace
from tracekit.cli.main import main

DEAD = 2**22 + 12345  # beyond pid_max's default: no such process


@pytest.fixture
def moved_aside(tmp_path):
    write_trace(tmp_path / "rank0.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1,
                                            "dur": 1}], header=dist(0, world=1))
    assert main(["ingest", str(tmp_path / "rank0.json"), "-o", str(tmp_path / "r")]) == 0
    # a run of the old layout (a real directory), its swap killed between moving it aside and linking
    real = tmp_path / os.readlink(tmp_path / "r")
    os.unlink(tmp_path / "r")
    shutil.move(str(real), str(tmp_path / f"r.old-{DEAD}"))
    return tmp_path / "r"


@pytest.mark.parametrize("argv", [["sql", "{r}", "SELECT count(*) AS n FROM events", "--format", "csv"],
                                  ["report", "{r}", "summary", "--format", "csv"],
                                  ["diff", "{r}", "{r}", "--format", "csv", "--only", "steps"]])
def test_the_cli_puts_the_run_back(moved_aside, capsys, argv):
    capsys.readouterr()
    assert main([a.format(r=moved_aside) for a in argv]) == 0, capsys.readouterr().err
    if argv[0] == "sql":
        assert capsys.readouterr().out == "n\n1\n"
    assert (moved_aside / "manifest.json").is_file()
    assert not list(moved_aside.parent.glob("r.old-*"))


def test_a_path_that_is_not_there_is_still_one_line(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nothing"), "summary"]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "Traceback" not in err
