"""tracekit.profiler: the on_trace_ready handler's layout, the recorded config, ingest at once."""

import json
import subprocess
import sys

import pytest

import tracekit

torch = pytest.importorskip("torch", reason="the profiler hook needs torch")


def test_handler_writes_template_path_and_config(tmp_path):
    from tracekit.profiler import record_config, trace_handler
    from tracekit.validate import recorded_config

    cfg = {"model": {"layers": 1, "hidden": 8, "heads": 2, "vocab": 16, "seq": 4, "micro_batch": 2},
           "plan": {"dp": 1}}
    sched = torch.profiler.schedule(wait=0, warmup=0, active=1, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=trace_handler(str(tmp_path / "t"), ingest_to=str(tmp_path / "run"))
                                ) as prof:
        record_config(prof, cfg)
        torch.ones(4) @ torch.ones(4)
        prof.step()
    assert (tmp_path / "t" / "iteration_1" / "rank0_trace.json.gz").exists()
    run = tracekit.open(tmp_path / "run")
    assert recorded_config(run) == cfg
    assert run.sql("SELECT count(*) AS n FROM events WHERE name = 'aten::dot'").to_pylist() == [{"n": 1}]


def test_library_never_imports_torch():
    code = "import sys, tracekit, tracekit.profiler, tracekit.model, tracekit.validate; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.strip().lower()) is False
