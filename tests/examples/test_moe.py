"""The mixture-of-experts example (expert parallelism, 2 ranks, Gloo) validates with zero error."""

import gzip
import json
import os
import pathlib
import subprocess
import sys

import pytest

import tracekit

pytest.importorskip("torch", reason="the example trains a model")
pytestmark = pytest.mark.slow  # torchrun, 2 ranks
ROOT = pathlib.Path(__file__).resolve().parents[2]
B, T, C, K, E, LAYERS = 4, 32, 64, 2, 4, 2  # the example's defaults


def routed_bytes(trace_dir, ranks=2):
    """From the raw traces: every gloo:all_to_all input (elements x 4 bytes, or x 8 for the int64 counts)
    and the input split sizes the c10d op recorded for each dispatch and combine."""
    total, splits = 0, []
    for r in range(ranks):
        with gzip.open(trace_dir / "iteration_3" / f"rank{r}_trace.json.gz") as f:
            evs = json.load(f)["traceEvents"]
        for e in evs:
            if e.get("ph") != "X":
                continue
            a = e.get("args", {})
            if e["name"] == "gloo:all_to_all":
                numel = 1
                for d in a["Input Dims"][0]:
                    numel *= d
                total += numel * {"float": 4, "long int": 8}[a["Input type"][0]]
            elif e["name"] == "c10d::alltoall_base_" and a["Concrete Inputs"][4] != "[]":
                splits.append(json.loads(a["Concrete Inputs"][4]))
    return total, splits


def test_moe_example_validates_exactly(tmp_path):
    out = tmp_path / "moe"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                           str(ROOT / "examples" / "moe" / "train.py"), "--trace-dir", str(out), "--steps", "1"],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    total, splits = routed_bytes(out)
    # by hand, per rank and MoE layer: E int64 counts, then 4 all-to-alls of B*T*K routed rows of C floats
    assert total == 2 * LAYERS * (E * 8 + 4 * B * T * K * C * 4)
    assert len(splits) == 2 * LAYERS * 4 and any(len(set(s)) > 1 for s in splits)  # routing: uneven splits
    rows = tracekit.validate(tracekit.ingest([out], tmp_path / "run", jobs=1)).to_pylist()
    got = {(r["collective"], r["group"]): r for r in rows}
    assert set(got) == {("alltoall", "EP"), ("allreduce", "DP")}
    assert got["alltoall", "EP"]["measured_bytes"] == total
    for r in rows:
        assert r["measured_count"] == r["predicted_count"] > 0, r
        assert r["bytes_error_pct"] == 0.0, r
