"""An output file that cannot be written is one line, before any work (issue 20, item 13)."""

import pytest

from tests.conftest import dist, write_trace
from tracekit.cli.main import main


@pytest.fixture
def run(tmp_path):
    write_trace(tmp_path / "rank0.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1,
                                            "dur": 1}], header=dist(0, world=1))
    assert main(["ingest", str(tmp_path / "rank0.json"), "-o", str(tmp_path / "run")]) == 0
    return tmp_path / "run"


@pytest.mark.parametrize("args", [["html", "{run}", "-o", "{out}.html"], ["timeline", "{run}", "-o", "{out}.json"],
                                  ["plot", "{run}", "-o", "{out}.png"], ["sql", "{run}", "SELECT 1", "-o", "{out}.csv"],
                                  ["report", "{run}", "summary", "-o", "{out}.csv", "--format", "csv"]])
def test_output_in_a_missing_directory(run, tmp_path, capsys, args):
    out = tmp_path / "missing" / "x"
    capsys.readouterr()
    argv = [a.format(run=run, out=out) for a in args]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err == f"error: {argv[-1] if args[-2] == '-o' else argv[-3]}: cannot write it (No such file or " \
                  "directory); check that its directory exists and is writable\n"
    assert not (tmp_path / "missing").exists()
