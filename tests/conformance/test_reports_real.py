"""Every report on every real trace set in ../shared/traces, and the summary's figures of every GPU rank
against the same figures computed here from the file's own records (json + Decimal, interval arithmetic
of its own): window, busy, communication, exposed communication, collectives."""

import gzip
import json
import pathlib
from decimal import ROUND_HALF_EVEN, Decimal

import pytest

import tracekit
from tests.conformance.test_kernel_kinds import GPU_CATS, expected_kind
from tests.conftest import shared_traces
from tracekit.reports import REGISTRY


def _ns(us) -> int:
    return int((Decimal(us) * 1000).to_integral_value(ROUND_HALF_EVEN))


def merged(ivs):
    out = []
    for s, e in sorted(ivs):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def length(ivs) -> int:
    return sum(e - s for s, e in ivs)


def overlap(a, b) -> int:
    """|a ∩ b| of two merged lists."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        total += max(0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def expected_summary(path) -> dict | None:
    """The summary's figures of one GPU trace from its records; None for a trace without GPU activity."""
    with (gzip.open if path.name.endswith(".gz") else open)(path, "rt") as f:
        doc = json.load(f, parse_float=Decimal)
    events = doc if isinstance(doc, list) else doc.get("traceEvents", [])
    by_kind: dict[str, list] = {"comm": [], "compute": [], "memory": []}
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") in GPU_CATS and "dur" in e:
            kind = expected_kind(e.get("name"), e["cat"])
            if kind in by_kind:
                ts = _ns(e["ts"])
                by_kind[kind].append((ts, ts + _ns(e["dur"])))
    every = by_kind["comm"] + by_kind["compute"] + by_kind["memory"]
    if not every:
        return None
    comm, compute = merged(by_kind["comm"]), merged(by_kind["compute"])
    window = max(e for _, e in every) - min(s for s, _ in every)
    busy = length(merged(every))
    return {"window_ms": window / 1e6, "busy_pct": 100.0 * busy / window if window else None,
            "comm_ms": length(comm) / 1e6, "exposed_comm_ms": (length(comm) - overlap(comm, compute)) / 1e6,
            "collectives": len(by_kind["comm"])}

SETS = ["param_dlrm_kineto_8rank", "hta_trace_filter_2rank", "hta_nccl_parser_config", "tracelens_b200_eager",
        "hta_df_index_resolver", "hta_trace_diff", "hta_ns_resolution", "hta_edge_cases/cpu_only",
        "hta_edge_cases/amd_trace", "hta_edge_cases/distributed_info_unavailable",
        "hta_edge_cases/large_integer_trace", "tracelens_xdit_sd35_perf"]


@pytest.mark.parametrize("name", SETS)
def test_reports_and_invariants(name, tmp_path):
    d = shared_traces() / name
    files = sorted(p for p in d.rglob("*") if p.name.endswith((".json", ".json.gz")))
    ranks = {str(f): i for i, f in enumerate(files)} if len(files) == 1 else None
    run = tracekit.ingest([d], tmp_path / "run", jobs=2, ranks=ranks)
    reports = {rep: tracekit.report(run, rep).to_pylist() for rep in REGISTRY}
    summary = {r["rank"]: r for r in reports["summary"]}
    checked = 0
    for t in run.sql("SELECT rank, path FROM traces").to_pylist():
        want = expected_summary(pathlib.Path(t["path"]))
        if want is None:  # a CPU-only trace: its intervals (Gloo ops, CPU ops) are not checked here
            continue
        got = {k: summary[t["rank"]][k] for k in want}
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9), (t["path"], got, want)
        checked += 1
    assert checked or name in ("hta_edge_cases/cpu_only", "hta_edge_cases/distributed_info_unavailable")
    # the exposed split adds up to the rank's exposed communication
    diff = run.sql("""SELECT o.rank, o.exposed_comm_ns, coalesce(sum(x.exposed_ns), 0) AS split
                      FROM comm_overlap o LEFT JOIN comm_exposure x USING (rank)
                      WHERE o.step IS NULL GROUP BY ALL
                      HAVING abs(o.exposed_comm_ns - coalesce(sum(x.exposed_ns), 0)) > 1""").to_pylist()
    assert diff == []
    # overlap --by step and exposed --by step say the same exposed time for every step
    steps = run.sql("""SELECT o.rank, o.step, o.exposed_comm_ns, coalesce(sum(x.exposed_ns), 0) AS split
                       FROM comm_overlap o LEFT JOIN comm_exposure x ON x.rank = o.rank AND x.step = o.step
                       WHERE o.step IS NOT NULL GROUP BY ALL
                       HAVING abs(o.exposed_comm_ns - coalesce(sum(x.exposed_ns), 0)) > 1""").to_pylist()
    assert steps == []
    # no bus bandwidth above what the GPU's links can carry
    peak = {gpu: PEAK_GBPS[key] for (gpu,) in run.con.execute("SELECT DISTINCT gpu_name FROM traces "
                                                              "WHERE gpu_name IS NOT NULL").fetchall()
            for key in PEAK_GBPS if key in gpu}
    if peak:
        limit = min(peak.values())
        (top,) = run.con.execute("SELECT greatest((SELECT max(busbw_gbps) FROM collectives), "
                                 "(SELECT max(transfer_busbw_gbps) FROM collective_instances))").fetchone()
        assert top is None or top <= limit, (top, peak)


# Per-direction bus bandwidth a GPU's links carry: half of the vendor's published total (bidirectional)
# NVLink bandwidth, which is the figure nccl-tests' busbw approaches on one node.
PEAK_GBPS = {"V100": 150, "A100": 300, "H100": 450, "H200": 450, "B200": 900}


def test_dlrm_matched_across_all_eight_ranks(tmp_path):
    run = tracekit.ingest([shared_traces() / "param_dlrm_kineto_8rank"], tmp_path / "run", jobs=2)
    rows = tracekit.report(run, "skew").to_pylist()
    assert len(rows) == 8
    assert all(r["ranks_present"] == 8 and r["missing_ranks"] == 0 and r["mismatch"] is None for r in rows)
    # the ranks share a clock: matched SendRecv/AllReduce kernels end within a few microseconds
    assert max(r["end_skew_us"] for r in rows) < 10
    assert {r["collective"] for r in rows} == {"alltoall", "allreduce"}


def test_sizes_from_launching_ops_on_2023_traces(tmp_path):
    run = tracekit.ingest([shared_traces() / "param_dlrm_kineto_8rank"], tmp_path / "run", jobs=2)
    rows = run.sql("SELECT meta_source, count(*) AS n, count(bytes) AS sized FROM collectives GROUP BY ALL").to_pylist()
    assert rows == [{"meta_source": "launching CPU op", "n": 64, "sized": 64}]


def test_2022_trace_without_shapes_leaves_sizes_null(tmp_path):
    d = shared_traces() / "hta_df_index_resolver"
    run = tracekit.ingest([d], tmp_path / "run", jobs=1, ranks={str(next(d.glob("*.gz"))): 1})
    assert run.sql("SELECT count(*) AS n, count(bytes) AS sized FROM collectives").to_pylist() == \
        [{"n": 2020, "sized": 0}]
