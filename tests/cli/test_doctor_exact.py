"""doctor --format json is exact: a rank list is every rank (it was cut to 16 and ",..."); the terminal
writes the same list with ranges, exact and short."""

from __future__ import annotations

import json

from tests.conftest import dist, write_trace
from tracekit.cli.main import main


def test_missing_ranks_are_listed_whole_in_json_and_as_ranges_in_the_terminal(tmp_path, capsys):
    # rank 0 of a 40-rank job alone: ranks 1..39 are missing (the header's world size says so)
    write_trace(tmp_path / "rank0.json", [{"ph": "X", "name": "op", "ts": 1, "dur": 2, "pid": 1, "tid": 1}],
                header=dist(0, world=40))
    assert main(["ingest", str(tmp_path / "rank0.json"), "-o", str(tmp_path / "run"), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["doctor", str(tmp_path / "run"), "--format", "json"]) == 0
    found = {r["check"]: r for r in json.loads(capsys.readouterr().out)}
    assert found["missing ranks"]["ranks"] == ",".join(str(r) for r in range(1, 40))
    assert main(["doctor", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "1-39" in out and ",..." not in out and "…" not in out


def test_rank_ranges():
    from tracekit.render.findings import rank_ranges

    assert rank_ranges("0,1,2,3,5,7,8") == "0-3,5,7-8"
    assert rank_ranges("1,3,5") == "1,3,5"
    assert rank_ranges("4") == "4" and rank_ranges("") == ""
    assert rank_ranges("gpu0,gpu1,gpu2") == "gpu0,gpu1,gpu2"  # not ranks: as it is


def test_advise_writes_its_ranks_as_ranges_too(capsys):
    """Also seen in issue 40: advise wrote 'ranks 1,2,3,...,63' (wrapped mid-number) where doctor writes
    '1-63'. A finding's text gives a list of ranks with ranges; a number with thousands separators stays."""
    import io

    import pyarrow as pa
    from rich.console import Console

    from tracekit.render.findings import print_findings
    table = pa.table({"priority": [1], "finding": ["late rank"], "saving_ms": [1.0], "saving_pct": [2.0],
                      "where": ["group g, ranks " + ",".join(str(r) for r in range(64)) + ", steps 1, 2"],
                      "evidence": ["waited 1,234,567 ns on ranks 4,5,6,9"]})
    buf = io.StringIO()
    print_findings(table, None, Console(file=buf, width=100))
    text = " ".join(buf.getvalue().split())
    assert "where group g, ranks 0-63, steps 1, 2" in text
    assert "evidence waited 1,234,567 ns on ranks 4-6,9" in text
