"""tracekit diff: two tables (collectives; steps). A run against itself changes nothing; FSDP against DDP
adds the allgathers that the FSDP traces themselves record; runs profiled at different steps line up by
order."""

import gzip
import json
import os
import subprocess
import sys

import pytest

import tracekit
from tests.conftest import ROOT, dist, write_trace
from tests.tracegen import kernel, step
from tracekit.commands.diff import diff


def tk(*args, cwd, env=None):
    r = subprocess.run([sys.executable, "-m", "tracekit.cli.main", *map(str, args)], cwd=cwd, capture_output=True,
                       text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    return r.returncode, r.stdout, r.stderr


@pytest.mark.slow
def test_a_run_against_itself_is_all_zero(tmp_path):
    run = tracekit.open(ROOT / "examples" / "traces" / "fsdp")
    d = diff(run, run)
    rows = d["collectives"].to_pylist()
    assert rows and all(r["bytes_a"] == r["bytes_b"] and r["exposed_ms_delta"] == 0 for r in rows)
    assert all(r["time_ratio"] == 1 for r in rows if r["time_ms_a"])
    assert all(r["step_a"] == r["step_b"] and r["step_ms_delta"] == 0 for r in d["steps"].to_pylist())
    fsdp = ROOT / "examples" / "traces" / "fsdp"
    code, out, err = tk("diff", fsdp, fsdp, "--format", "json", cwd=tmp_path, env={"TRACEKIT_CACHE": str(tmp_path)})
    assert code == 0, err
    got = json.loads(out)
    assert list(got) == ["collectives", "steps"] and len(got["collectives"]) == len(rows)


def test_fsdp_adds_allgathers_over_ddp():
    fsdp = ROOT / "examples" / "traces" / "fsdp"
    recorded = 0  # the allgathers the FSDP traces record, all ranks
    for f in fsdp.rglob("*.json.gz"):
        recorded += sum(1 for e in json.loads(gzip.decompress(f.read_bytes()))["traceEvents"]
                        if e.get("name") == "gloo:all_gather" and e.get("ph") == "X")
    rows = diff(tracekit.open(ROOT / "examples" / "traces" / "ddp"), tracekit.open(fsdp))["collectives"].to_pylist()
    added = [r for r in rows if r["collective"] == "allgather" and r["count_a"] is None]
    assert recorded > 0 and sum(r["count_b"] for r in added) == recorded
    assert all(r["bytes_b"] > 0 and r["exposed_ms_a"] is None for r in added)


def _job(d, steps, step_us):
    """One rank profiled at ``steps``, each step ``step_us`` long with one 10 us allreduce kernel in it."""
    evs = []
    for i, n in enumerate(steps):
        t0 = 1000 * i
        evs.append(step(n, t0, step_us))
        evs += kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", t0 + 20, 10, launch=(t0 + 10, 1),
                      **{"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024,
                         "dtype": "Float", "Group size": 1})
    d.mkdir()
    write_trace(d / "rank0.json", evs, header=dist(0, world=1))


@pytest.mark.slow
def test_steps_pair_by_order_or_by_number(tmp_path):
    _job(tmp_path / "a", [3, 4], 100)  # A profiled steps 3 and 4 (100 us each)
    _job(tmp_path / "b", [7, 8], 150)  # B profiled steps 7 and 8 (150 us each)
    env = {"TRACEKIT_CACHE": str(tmp_path / "cache")}
    code, out, err = tk("diff", "a", "b", "--only", "steps", "--format", "csv",
                        "--columns", "position,step_a,step_b,step_ms_a,step_ms_b,step_ms_delta", cwd=tmp_path, env=env)
    assert code == 0, err
    assert out.splitlines() == ["position,step_a,step_b,step_ms_a,step_ms_b,step_ms_delta",
                                "1,3,7,0.1,0.15,0.04999999999999999", "2,4,8,0.1,0.15,0.04999999999999999"]
    code, out, err = tk("diff", "a", "b", "--only", "steps", "--steps-by", "number", "--format", "csv",
                        "--columns", "step_a,step_b", cwd=tmp_path, env=env)
    assert code == 0 and out.splitlines() == ["step_a,step_b", "3,", "4,", ",7", ",8"], out
    code, out, err = tk("diff", "a", "b", "--format", "csv", cwd=tmp_path, env=env)
    assert code == 2 and err == "error: --format csv takes one table: add --only collectives or --only steps\n"
    code, out, err = tk("diff", "a", "b", cwd=tmp_path, env=env)  # the terminal: both tables, titled
    assert code == 0 and "diff collectives — b against a" in out
    assert "diff steps — b against a, steps paired by order" in out


def test_runs_of_different_step_counts_are_told_their_totals_differ(tmp_path):
    """The collectives table holds totals: where A profiled 1 step and B 4 (the shipped ddp example and the
    planted ddp recording: their traces hold 1 and 4 ProfilerSteps), the table says so."""
    from tracekit.table_meta import note_of

    a = tracekit.ingest([ROOT / "examples" / "traces" / "ddp"], tmp_path / "a", jobs=1)
    b = tracekit.ingest([ROOT / "examples" / "traces" / "planted-ddp-delay"], tmp_path / "b", jobs=1)
    note = note_of(diff(a, b)["collectives"])
    assert note and note.startswith("A profiled 1 step and B 4:"), note
    assert note_of(diff(b, b)["collectives"]) is None


def test_unlike_jobs_are_told_apart(tmp_path):
    """Also seen in issue 40: diff compared an A100 TP8 GPT with a DLRM job without a word. Runs of other
    ranks, backends or GPUs are compared all the same, and the note says what each ran on (the traces'
    distributedInfo and deviceProperties)."""
    from tracekit.table_meta import note_of

    _job(tmp_path / "a", [1, 2], 100)  # 1 rank, nccl, no GPU recorded
    d = tmp_path / "b"
    d.mkdir()
    for r in range(2):
        write_trace(d / f"rank{r}.json", [step(1, 0, 100), step(2, 1000, 100)],
                    header={**dist(r, world=2, backend="gloo"), "deviceProperties": [{"id": 0, "name": "NVIDIA A100"}]})
    a, b = tracekit.open(tmp_path / "a"), tracekit.open(d)
    assert note_of(diff(a, b)["collectives"]) == (
        "A and B are not the same kind of job (A: 1 rank, nccl, no GPU recorded; B: 2 ranks, gloo, NVIDIA A100): "
        "the differences below are between unlike work, not a change to one job")
    assert note_of(diff(a, a)["collectives"]) is None
