"""`tracekit ingest --rederive` derives a run as an ingest of the same traces does (issue 30: it took 3x a
fresh ingest on DLRM's 8 ranks, a DuckDB connection and the planning of the rules per rank): a small run of
several ranks whole on one connection, and its facts then hold the rows the ingest gave."""

import tracekit
from tests.conftest import dist, write_trace
from tracekit.rules import FACTS, FINISHED, REDUCED


def _traces(d):
    d.mkdir()
    for r in range(3):
        evs = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": 10 * i + r, "dur": 5,
                "args": {"stream": 7}} for i in range(20)]
        write_trace(d / f"rank{r}.json", evs, header=dist(r, world=3))
    return d


def _rows(run):
    return {n: sorted(map(repr, run.sql(f"SELECT * FROM {n}").to_pylist()))
            for n in FACTS + REDUCED + FINISHED if not n.startswith("_")}


def test_a_small_run_is_rederived_whole(tmp_path, monkeypatch):
    traces = _traces(tmp_path / "t")
    before = _rows(tracekit.ingest([traces], tmp_path / "run", jobs=1))
    import tracekit.ingestion.rederive as rederive
    per_rank = []
    real = rederive.derive_rank
    monkeypatch.setattr(rederive, "derive_rank", lambda *a, **k: per_rank.append(a[1]) or real(*a, **k))
    tracekit.rederive(tmp_path / "run")
    assert per_rank == []  # one connection for the run, not one per rank (it was [0, 1, 2])
    assert _rows(tracekit.open(tmp_path / "run")) == before
