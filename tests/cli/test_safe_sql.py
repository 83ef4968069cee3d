"""`tracekit sql` reads the run and nothing else unless --unsafe."""

import pytest

from tests.conftest import dist, write_trace
from tracekit.cli.main import main


@pytest.fixture
def run(tmp_path):
    write_trace(tmp_path / "rank0.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1,
                                            "dur": 1}], header=dist(0, world=1))
    assert main(["ingest", str(tmp_path / "rank0.json"), "-o", str(tmp_path / "run")]) == 0
    return tmp_path / "run"


@pytest.mark.parametrize("query, words", [
    ("COPY (SELECT 1) TO '{run}/traces.parquet' (FORMAT parquet)", "a COPY statement is not allowed"),
    ("SELECT * FROM read_csv('/etc/passwd')", "file system operations are disabled"),
    ("ATTACH '{tmp}/x.db' AS x", "a ATTACH statement is not allowed"),
    ("INSTALL httpfs", "not allowed"),
    ("SET enable_external_access = true", "a SET statement is not allowed"),
    ("EXPORT DATABASE '{tmp}/dump'", "not allowed"),
    ("SELECT 1; COPY (SELECT 1) TO '{tmp}/x.csv'", "a COPY statement is not allowed"),
])
def test_read_only_by_default(run, tmp_path, capsys, query, words):
    before = (run / "traces.parquet").read_bytes()
    assert main(["sql", str(run), query.format(run=run, tmp=tmp_path)]) == 5
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
    assert (run / "traces.parquet").read_bytes() == before
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "x.db").exists() and not (tmp_path / "dump").exists()


def test_reading_the_run_still_works(run, capsys):
    assert main(["sql", str(run), "SELECT count(*) AS n FROM events", "--format", "csv"]) == 0
    assert capsys.readouterr().out == "n\n1\n"
    assert main(["sql", str(run), "SELECT count(*) AS n FROM collectives", "--format", "csv"]) == 0


def test_unsafe_lifts_it(run, tmp_path):
    assert main(["sql", str(run), f"COPY (SELECT 42 AS x) TO '{tmp_path}/x.csv'", "--unsafe"]) == 0
    assert (tmp_path / "x.csv").read_text().strip().splitlines() == ["x", "42"]
