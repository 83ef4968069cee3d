"""tracekit.profiler: the on_trace_ready handler's layout, the recorded config, ingest at once."""

import json
import os
import subprocess
import sys

import pytest

import tracekit

torch = pytest.importorskip("torch", reason="the profiler hook needs torch")


@pytest.mark.slow  # profiles a training step with torch
def test_handler_writes_template_path_and_config(tmp_path):
    from tracekit.analytic.recorded import recorded_config
    from tracekit.profiler import record_config, trace_handler

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
    code = ("import sys, tracekit, tracekit.profiler, tracekit.analytic, tracekit.commands.validate; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.strip().lower()) is False


@pytest.mark.slow
def test_config_recorded_before_the_first_step_is_kept(tmp_path):
    """Kineto drops metadata added outside the active steps; record_config works at any time."""
    from tracekit.analytic.recorded import recorded_config
    from tracekit.profiler import record_config, trace_handler

    cfg = {"model": {"layers": 1, "hidden": 8, "heads": 2, "vocab": 16, "seq": 4, "micro_batch": 2},
           "plan": {"dp": 1, "groups": {"DP": "0"}}, "steps": 1}
    sched = torch.profiler.schedule(wait=1, warmup=1, active=1, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=trace_handler(str(tmp_path / "t"))) as prof:
        record_config(prof, cfg)  # in the wait phase
        for _ in range(3):
            torch.ones(4) @ torch.ones(4)
            prof.step()
    run = tracekit.ingest([tmp_path / "t"], tmp_path / "run", jobs=1)
    assert recorded_config(run) == cfg


@pytest.mark.parametrize("cfg, words", [
    ({"model": {"layers": 1}, "plan": {"dp": 1}, "stepz": 1}, "unknown key 'stepz'"),
    ({"model": {"layers": 1, "hidden": 8, "heads": 2, "vocab": 16, "seq": 4, "micro_batch": 2, "hiden": 8},
      "plan": {"dp": 1}}, "model.hiden is not a field"),
    ({"model": {"layers": 1, "hidden": 8, "heads": 2, "vocab": 16, "seq": 4, "micro_batch": 2},
      "plan": {"dp": 1, "groups": {1, 2}}}, "plain JSON data"),
    ({"model": {"layers": 1, "hidden": 8, "heads": 3, "vocab": 16, "seq": 4, "micro_batch": 2},
      "plan": {"dp": 1}}, "hidden 8 must be divisible by heads 3"),
])
def test_a_wrong_config_is_named(cfg, words):
    from tracekit.errors import TracekitError
    from tracekit.profiler import check_config
    with pytest.raises(TracekitError, match=words):
        check_config(cfg)


GLOO_THREADS = r"""
import json, os, sys
import torch, torch.distributed as dist
from tracekit.errors import TracekitError
from tracekit.profiler import gloo_threads
dist.init_process_group("gloo", init_method="file://" + sys.argv[1], rank=0, world_size=1)
other = dist.new_group([0])
found = gloo_threads({"DP": dist.group.WORLD, "TP": other})
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    for g in (dist.group.WORLD, other):
        works = [dist.all_reduce(torch.ones(1 << 16), group=g, async_op=True) for _ in range(8)]
        [w.wait() for w in works]
    try:
        gloo_threads([other])
        refused = None
    except TracekitError as exc:
        refused = str(exc)
path = os.path.join(os.path.dirname(sys.argv[1]), "t.json")
prof.export_chrome_trace(path)
ops = [e for e in json.load(open(path))["traceEvents"] if e.get("name") == "gloo:all_reduce"]
ran = [(e["tid"], e["ts"]) for e in ops]
print(json.dumps({"found": found, "ran": ran, "refused": refused,
                  "names": [dist._get_process_group_name(g) for g in (dist.group.WORLD, other)]}))
"""


@pytest.mark.slow  # starts process groups in a subprocess
def test_gloo_threads_names_each_groups_worker_threads(tmp_path):
    """The threads that gloo_threads finds (before profiling) are the ones that run each group's ops in
    the profiled trace afterwards; inside a profiler it refuses (its allreduces would be in the trace)."""
    out = subprocess.run([sys.executable, "-c", GLOO_THREADS, str(tmp_path / "store")], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    world, other = got["names"]
    ran = sorted(got["ran"], key=lambda r: r[1])  # the world's 8 allreduces ran (and waited) first
    assert {str(t) for t, _ in ran[:8]} <= {t for t, g in got["found"].items() if g == world}
    assert {str(t) for t, _ in ran[8:]} <= {t for t, g in got["found"].items() if g == other}
    assert sorted(got["found"].values()) == sorted([world] * 2 + [other] * 2)  # Gloo: 2 worker threads a group
    assert got["refused"].startswith("gloo_threads: call it before the profiler starts")


@pytest.mark.slow  # profiles two cycles with torch
def test_handler_makes_each_cycles_rank_part_in_a_process_of_its_own(tmp_path, capsys):
    """trace_handler(DIR, run=RUN): the trace as without it, and the rank's part of RUN made beside the
    training (a child process); the reduce then answers every report as an ingest of DIR does."""
    from tests.cli.test_rank_parts import answers
    from tracekit.cli.main import main
    from tracekit.profiler import _PARTS, trace_handler, wait_for_parts

    started = []
    sched = torch.profiler.schedule(wait=0, warmup=0, active=1, repeat=2)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=trace_handler(str(tmp_path / "t"), run=str(tmp_path / "run"))
                                ) as prof:
        for _ in range(2):
            torch.ones(4) @ torch.ones(4)
            prof.step()
            started += [p.pid for p in _PARTS[len(started):]]
    assert len(started) == 2 and os.getpid() not in started  # one process per cycle, not this one
    assert wait_for_parts() == [0, 0]
    assert sorted(os.listdir(tmp_path / "run" / "parts")) == ["iteration_1", "iteration_2"]
    capsys.readouterr()
    assert main(["ingest", "--reduce", str(tmp_path / "run"), "--iteration", "2"]) == 0
    assert main(["ingest", str(tmp_path / "t" / "iteration_2"), "-o", str(tmp_path / "central")]) == 0
    assert answers(capsys, tmp_path / "run") == answers(capsys, tmp_path / "central")
    capsys.readouterr()
    assert main(["sql", str(tmp_path / "run"), "SELECT count(*) AS n FROM events WHERE name = 'aten::dot'",
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"n": 1}]  # the one dot product of that cycle


@pytest.mark.slow  # profiles two cycles with torch
def test_a_run_per_cycle_with_step_in_the_run(tmp_path):
    from tracekit.profiler import trace_handler, wait_for_parts

    sched = torch.profiler.schedule(wait=0, warmup=0, active=1, repeat=2)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=trace_handler(str(tmp_path / "t"), run=str(tmp_path / "run-{step}"))
                                ) as prof:
        for _ in range(2):
            torch.ones(4) @ torch.ones(4)
            prof.step()
    assert wait_for_parts() == [0, 0]
    for step in (1, 2):  # the handler's own trace directories name the cycles: iteration_1, iteration_2
        assert os.listdir(tmp_path / f"run-{step}" / "parts") == [f"iteration_{step}"]
        run = tracekit.reduce(tmp_path / f"run-{step}")
        assert run.reduced["ranks"] == [0] and run.reduced["missing"] == []
