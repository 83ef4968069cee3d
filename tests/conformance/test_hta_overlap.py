"""tracekit's overlap against HTA 0.5.0's get_comm_comp_overlap where the definitions coincide.

Deliberate differences, each pinned below:
- HTA keeps only kernels launched before the last ProfilerStep starts (when a trace has more than one
  step); tracekit's comm_overlap covers the whole trace. `_hta_window` replays HTA's filter.
- HTA counts as compute only kernels whose name has no Memcpy/Memset/Sync; tracekit puts memcpy and
  memset in `memory` and any other kernel in `compute`.
- HTA works in whole microseconds; on traces with nanosecond decimals the percentages differ a little.
- HTA 0.5.0's communication rule is the regex ^nccl.*Kernel: it does match ncclDevKernel_* (tested below
  on the B200 trace), but not RCCL/MSCCL names (rccl*, msccl*), which tracekit counts as comm.
"""

import json
import subprocess
import sys

import pytest

import tracekit
from tests.conftest import shared_traces

hta = pytest.importorskip("hta.trace_analysis", reason="HolisticTraceAnalysis not installed (pip install .[hta])")

HTA_WINDOW = """
CREATE OR REPLACE VIEW comm_intervals AS
WITH last AS (SELECT rank, max(ts_ns) AS last_start, count(*) AS n FROM steps GROUP BY rank)
SELECT g.rank, CAST(NULL AS BIGINT) AS step, g.kind, g.ts_ns, g.end_ns, g.event_index
FROM gpu_kernels g LEFT JOIN last USING (rank)
WHERE (g.kind = 'comm' OR (g.kind = 'compute' AND NOT regexp_matches(g.name, 'Memcpy|Memset|Sync')))
  AND (coalesce(last.n, 0) <= 1 OR g.launch_ts_ns < last.last_start)
"""


HTA_CODE = """
import json, logging, sys
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
df = TraceAnalysis(trace_dir=sys.argv[1]).get_comm_comp_overlap(visualize=False)
print(json.dumps({int(r): float(p) for r, p in zip(df["rank"], df["comp_comm_overlap_pctg"])}))
"""


def hta_overlap(trace_dir):
    """HTA's overlap per rank, computed in a process of its own, as a user runs it: HTA forks worker
    processes, and a fork of this test process (DuckDB's threads, earlier tests' state) is no clean start."""
    p = subprocess.run([sys.executable, "-c", HTA_CODE, str(trace_dir)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    return {int(k): v for k, v in json.loads(p.stdout.strip().splitlines()[-1]).items()}


def ours(run, hta_window: bool):
    if hta_window:  # the same overlap rules (their .sql files), over HTA's window of intervals
        from tracekit import sql_files as tksql
        run.con.execute(HTA_WINDOW)
        for name in ("comm_segments", "comm_overlap"):
            run.con.execute(tksql.rule(name).text)
    return dict(run.con.execute("SELECT rank, overlap_pct FROM comm_overlap WHERE step IS NULL").fetchall())


@pytest.mark.parametrize("name, tol", [("param_dlrm_kineto_8rank", 0.006), ("hta_trace_filter_2rank", 0.006),
                                       ("tracelens_b200_eager", 0.006), ("hta_nccl_parser_config", 0.5)])
def test_overlap_matches_hta(name, tol, tmp_path):
    d = shared_traces() / name
    expect = hta_overlap(d)
    got = ours(tracekit.ingest([d], tmp_path / "run", jobs=1), hta_window=True)
    assert sorted(got) == sorted(expect)
    for rank, pct in expect.items():
        assert got[rank] == pytest.approx(pct, abs=tol), rank


def test_last_step_difference_is_real(tmp_path):
    """On a 3-step trace tracekit counts the last step; HTA drops it: the numbers differ, by design."""
    d = shared_traces() / "hta_nccl_parser_config"
    run = tracekit.ingest([d], tmp_path / "run", jobs=1)
    whole = ours(run, hta_window=False)[0]
    (steps,) = run.con.execute("SELECT count(*) FROM steps").fetchone()
    assert steps == 3
    assert abs(whole - hta_overlap(d)[0]) > 1.0


def test_hta_kernel_rule_versus_ours():
    from hta.utils.utils import is_comm_kernel

    assert is_comm_kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)")
    assert is_comm_kernel("ncclKernel_AllReduce_RING_LL_Sum_float")
    assert not is_comm_kernel("rcclGenericKernel")  # tracekit: comm
