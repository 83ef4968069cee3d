"""Every report and view on every real trace set in ../shared/traces: no error, and the invariants hold."""

import pytest

import tracekit
from tracekit.reports import REGISTRY
from tests.conftest import shared_traces

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
    for rep in REGISTRY:
        tracekit.report(run, rep)
        tracekit.report(run, "overlap", by="step")
    bad = run.sql("""SELECT * FROM comm_overlap
                     WHERE exposed_comm_ns + overlap_ns <> comm_ns OR overlap_ns > least(comm_ns, compute_ns)
                        OR busy_ns + idle_ns <> window_ns""").num_rows
    assert bad == 0
    # the exposed split adds up to the rank's exposed communication
    diff = run.sql("""SELECT o.rank, o.exposed_comm_ns, coalesce(sum(x.exposed_ns), 0) AS split
                      FROM comm_overlap o LEFT JOIN comm_exposure x USING (rank)
                      WHERE o.step IS NULL GROUP BY ALL
                      HAVING abs(o.exposed_comm_ns - coalesce(sum(x.exposed_ns), 0)) > 1""").to_pylist()
    assert diff == []
    # the step rows (outside-of-steps -1 included) add up exactly to the whole-trace row
    sums = run.sql("""SELECT rank, sum(comm_ns) FILTER (WHERE step IS NULL) - sum(comm_ns) FILTER (WHERE step IS NOT NULL) AS comm,
                             sum(compute_ns) FILTER (WHERE step IS NULL) - sum(compute_ns) FILTER (WHERE step IS NOT NULL) AS compute,
                             sum(overlap_ns) FILTER (WHERE step IS NULL) - sum(overlap_ns) FILTER (WHERE step IS NOT NULL) AS overlap,
                             sum(exposed_comm_ns) FILTER (WHERE step IS NULL) - sum(exposed_comm_ns) FILTER (WHERE step IS NOT NULL) AS exposed,
                             sum(busy_ns) FILTER (WHERE step IS NULL) - sum(busy_ns) FILTER (WHERE step IS NOT NULL) AS busy
                      FROM comm_overlap GROUP BY rank""").to_pylist()
    assert all(r["comm"] == r["compute"] == r["overlap"] == r["exposed"] == r["busy"] == 0 for r in sums), sums
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
                                 "(SELECT max(busbw_gbps) FROM collective_instances))").fetchone()
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
