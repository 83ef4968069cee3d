"""Many ranks in a terminal: above 64 ranks a per-rank report printed as a table is each number's spread
(min, median, p90, max, the rank of the max) and the rows that matter most, with how to get every row.
The expected figures come from the exposed times planted in the traces, worked out here."""

from __future__ import annotations

import csv
import io
import statistics

import pytest

from tests.conftest import dist, write_trace
from tests.tracegen import kernel, step
from tracekit.cli.main import main

RANKS = 100
SLOW = 57  # its allreduce runs 5 ms; the others' 0.1-0.7 ms


def exposed_ms(r: int) -> float:
    return 5.0 if r == SLOW else (r % 7 + 1) / 10


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("many")
    (d / "traces").mkdir()
    for r in range(RANKS):
        # a gemm 100-1100 us, then the allreduce from 2000 us: nothing hides it, all of it is exposed
        events = [step(1, 0, 20000)] + kernel("volta_sgemm_128x64_nn", 100, 1000) + kernel(
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 2000,
            int(exposed_ms(r) * 1000), stream=20)
        write_trace(d / "traces" / f"rank{r}.json", events, header=dist(r, world=RANKS))
    assert main(["ingest", str(d / "traces"), "-o", str(d / "run"), "--no-progress", "--jobs", "2"]) == 0
    return d / "run"


def _p90(values):
    """The 90th percentile interpolated linearly between the two nearest values (as numpy's default)."""
    v = sorted(values)
    pos = 0.9 * (len(v) - 1)
    lo = int(pos)
    return v[lo] + (v[min(lo + 1, len(v) - 1)] - v[lo]) * (pos - lo)


def test_a_per_rank_report_of_100_ranks_is_its_spread_and_its_worst_rows(run, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # (the rows read from the boxed table, which 80 characters would compact)
    capsys.readouterr()
    assert main(["report", str(run), "summary"]) == 0
    out, err = capsys.readouterr()
    assert "100 ranks: each number's spread over the ranks" in out
    line = next(ln for ln in out.splitlines() if "exposed_comm_ms" in ln and "│" in ln)
    cells = [c.strip() for c in line.split("│") if c.strip()]
    values = [exposed_ms(r) for r in range(RANKS)]
    assert cells == ["exposed_comm_ms", "100", f"{min(values):.3f}", f"{statistics.median(values):.3f}",
                     f"{_p90(values):.3f}", "5.000", str(SLOW)]
    # then the 8 ranks with the most exposed communication, the slow one first, and not the 100 rows
    assert "the 8 ranks with the most exposed_comm_ms" in out
    rows_after = out.split("the 8 ranks with the most exposed_comm_ms")[1]
    ranks = [int(c.split("│")[1]) for c in rows_after.splitlines() if c.startswith("│")]
    assert ranks[0] == SLOW and len(ranks) == 8
    assert "--all prints every row; --format csv, json or parquet keeps every row" in err


def test_all_and_csv_keep_every_row(run, capsys):
    capsys.readouterr()
    assert main(["report", str(run), "summary", "--all", "--columns", "rank,exposed_comm_ms"]) == 0
    out = capsys.readouterr().out
    assert sum(1 for ln in out.splitlines() if ln.startswith("│")) == RANKS
    assert main(["report", str(run), "summary", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == RANKS and float(rows[SLOW]["exposed_comm_ms"]) == 5.0
