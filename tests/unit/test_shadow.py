"""A view computed once for a command (tracekit/shadow.py): a temporary table shadows it within the block,
nested blocks share it (the page's block holds while advise's, inside it, ends), and it is gone after."""

import pathlib

import tracekit
from tracekit.shadow import computed_once

ROOT = pathlib.Path(__file__).resolve().parents[2]


def temp_tables(run) -> set[str]:
    return {r["table_name"] for r in run.sql("SELECT table_name FROM duckdb_tables() WHERE temporary").to_pylist()}


def test_nested_blocks_share_the_table_and_the_outer_one_drops_it(tmp_path):
    run = tracekit.ingest([ROOT / "examples" / "traces" / "ddp"], tmp_path / "run", jobs=1)
    n = run.sql("SELECT count(*) AS n FROM collectives").column("n")[0].as_py()
    with computed_once(run, ("collectives",)):
        assert temp_tables(run) == {"collectives"}
        with computed_once(run, ("collectives", "comm_exposure")):
            assert temp_tables(run) == {"collectives", "comm_exposure"}
        assert temp_tables(run) == {"collectives"}  # the inner block made only comm_exposure
        assert run.sql("SELECT count(*) AS n FROM collectives").column("n")[0].as_py() == n
    assert temp_tables(run) == set()
    assert run.sql("SELECT count(*) AS n FROM collectives").column("n")[0].as_py() == n
