"""benchmarks/bench_source.py (issue 39): a job's rank parts made as the handler makes them, reduced, the first
answer timed; its run answers every report as a central ingest of the same traces (the oracle: that other
code path), and its last line gives the figures in the issue's words."""

import re

import pytest

from benchmarks import bench_source
from tracekit.reports import REGISTRY


@pytest.mark.slow  # 8 synthetic ranks, their parts, a reduce and a central ingest, each report twice
def test_bench_source_reduces_8_ranks_as_a_central_ingest(tmp_path, capsys):
    assert bench_source.main(["--ranks", "8", "--compare", "--work", str(tmp_path)]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[1].startswith("8 ranks (tp2-pp2-dp2, 1 host): parts made in ")
    assert f"reports equal: {len(REGISTRY)} of {len(REGISTRY)}" in out[-2]
    assert re.fullmatch(r"first answer \d+\.\d s, \d+ MB \(\d+\.\d s of CPU\)", out[-1]), out[-1]
    assert sorted(p.name for p in (tmp_path / "run" / "parts" / "iteration_2").iterdir()) == [
        ".group-0000000-0000007.lock", "group-0000000-0000007"] + [f"rank-{r}" for r in range(8)]
