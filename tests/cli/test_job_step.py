"""Issue 38, item 4: the step of a run is one number, the job's step (sql/views/job_steps.sql), and
whatif, diff and advise print the same one. On examples/traces/pp (2 pipeline stages, one profiled step,
the last stage starting its step 4.1 ms before the first), expected from the trace files alone."""

import gzip
import json
import pathlib
import re

import pytest

import tracekit
from tracekit.commands.advise import advise
from tracekit.commands.diff import diff
from tracekit.commands.whatif import whatif
from tracekit.table_meta import note_of

PP = pathlib.Path(__file__).resolve().parents[2] / "examples" / "traces" / "pp"


def spans_us(run_dir) -> dict:
    """Per ProfilerStep#N, each rank's (start, duration) in us, read from the raw trace JSON."""
    per: dict = {}
    for f in sorted(run_dir.glob("*/rank*_trace.json.gz")):
        d = json.loads(gzip.decompress(f.read_bytes()))
        for e in d["traceEvents"]:
            if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#") \
                    and not str(e.get("cat", "")).startswith("gpu"):
                per.setdefault(int(e["name"].split("#")[1]), {})[d["distributedInfo"]["rank"]] = (e["ts"], e["dur"])
    return per


@pytest.fixture(scope="module")
def pp_run(tmp_path_factory):
    return tracekit.ingest([PP], tmp_path_factory.mktemp("pp") / "run", jobs=1)


def test_the_pipelines_step_is_its_longest_stage_span_in_whatif_diff_and_advise(pp_run):
    per = spans_us(PP)
    assert list(per) == [2] and sorted(per[2]) == [0, 1]
    (s0, d0), (s1, d1) = per[2][0], per[2][1]
    assert s0 - s1 == pytest.approx(4087.3, abs=0.1)  # the last stage starts first
    job_ms = max(d0, d1) / 1e3  # 56.855 (rank 1); the mean over ranks was diff's: 53.883
    assert job_ms == pytest.approx(56.855, abs=0.001)

    assert pp_run.sql("SELECT step, ranks, longest_rank FROM job_steps").to_pylist() == [
        {"step": 2, "ranks": 2, "longest_rank": 1}]
    (own,) = [r for r in whatif(pp_run).to_pylist() if r["group"].startswith("step")]
    assert own["measured_step_ms"] == pytest.approx(job_ms, abs=1e-6)
    (row,) = diff(pp_run, pp_run)["steps"].to_pylist()
    assert row["step_ms_a"] == pytest.approx(job_ms, abs=1e-6)
    note = note_of(advise(pp_run))
    said = re.match(r"the job's step ([\d,.]+) ms \(the longest rank's ProfilerStep, median over 1 step; 2 ranks\)",
                    note)
    assert said and float(said.group(1)) == pytest.approx(job_ms, abs=0.0005), note
