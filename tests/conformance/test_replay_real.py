"""The replay and the critical path on every real trace set with ProfilerSteps and every shipped example:
each rank's step replays within 5 % of measured unless doctor names it (steps that do not replay), and each
step's critical path adds up to the step's span, computed here from the facts (the earliest rank's
ProfilerStep start, or the previous step's latest end where that is later, to the latest end of the step's
CPU span, GPU ops and collectives on any rank), not from the graph."""

import pytest

import tracekit
from tests.conftest import ROOT, shared_traces

SHARED = ["hta_df_index_resolver", "hta_nccl_parser_config", "hta_ns_resolution", "hta_trace_diff",
          "hta_trace_filter_2rank", "param_dlrm_kineto_8rank", "tracelens_xdit_sd35_perf",
          "hta_edge_cases/cpu_only", "hta_edge_cases/distributed_info_unavailable"]
EXAMPLES = ["ddp", "fsdp", "moe", "pp", "tp", "tp-compile"]
BIG = {"hta_df_index_resolver", "tracelens_xdit_sd35_perf"}

SPAN_SQL = """
WITH al AS (SELECT rank, offset_ns, drift_ppm, ref_ns FROM rank_clocks),
ends AS (
    SELECT s.step, tk_aligned(s.end_ns, al.offset_ns, al.drift_ppm, al.ref_ns) AS t FROM steps s JOIN al USING (rank)
    UNION ALL
    SELECT g.step, tk_aligned(g.end_ns, al.offset_ns, al.drift_ppm, al.ref_ns) FROM gpu_kernels g JOIN al USING (rank)
    WHERE g.step IS NOT NULL
    UNION ALL
    SELECT c.step, w.end_ns FROM collective_waits w JOIN collectives c USING (rank, event_index)
    WHERE c.step IS NOT NULL),
starts AS (SELECT s.step, min(tk_aligned(s.ts_ns, al.offset_ns, al.drift_ppm, al.ref_ns)) AS t0
           FROM steps s JOIN al USING (rank) GROUP BY s.step),
spans AS (SELECT step, any_value(t0) AS t0, max(t) AS t1 FROM ends JOIN starts USING (step) GROUP BY step)
-- a step begins no sooner than the previous (profiled) step's last work ends
SELECT s.step, s.t1 - least(greatest(s.t0, coalesce(p.t1, s.t0)), s.t1) AS span_ns
FROM spans s LEFT JOIN spans p ON p.step = s.step - 1 ORDER BY s.step
"""


def _sets():
    out = [pytest.param(("shared", s), id=s, marks=[pytest.mark.slow] if s in BIG else []) for s in SHARED]
    return out + [pytest.param(("example", e), id=f"example-{e}") for e in EXAMPLES]


@pytest.mark.parametrize("which", _sets())
def test_replay_and_critical_path(which, tmp_path):
    kind, name = which
    src = shared_traces() / name if kind == "shared" else ROOT / "examples" / "traces" / name
    run = tracekit.ingest([src], tmp_path / "run", jobs=1)
    rows = tracekit.report(run, "replay").to_pylist()
    assert rows, "every set here has ProfilerSteps"
    flagged = {r["ranks"] for r in tracekit.doctor(run).to_pylist() if r["check"] == "steps that do not replay"}
    flagged = {int(x) for ranks in flagged for x in ranks.split(",")}
    for r in rows:
        assert abs(r["error_pct"]) <= 5 or r["rank"] in flagged, r
    path = tracekit.report(run, "critical_path").to_pylist()
    exact = all(r["error_pct"] == 0 for r in rows)
    for step, span in ((s["step"], s["span_ns"]) for s in run.sql(SPAN_SQL).to_pylist()):
        got = sum(p["ns"] for p in path if p["step"] == step)
        if exact:  # the replay gives back the trace: its path spans the step as the facts say
            assert got == span, step
        assert got > 0
