"""Every GPU activity of the real traces in ../shared/traces gets the kind a rule of its own, written
here from the names and categories the files record, gives it (docs/definitions.md, "Kernel kinds"):
memory for memcpy/memset, comm for NCCL/RCCL kernels and kernels whose name says a collective (PyTorch
symmetric memory's multimem_all_reduce_kernel in tracelens_b200_eager), compute for any other named
kernel, other for one without a name."""

import gzip
import json

import pytest

import tracekit
from tests.conftest import all_shared_files

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def expected_kind(name, cat):
    if cat in ("gpu_memcpy", "gpu_memset") or (name or "").startswith(("Memcpy", "Memset")):
        return "memory"
    if not name:
        return "other"
    low = name.lower()
    says = ("nccl", "rccl", "all_reduce", "allreduce", "all_gather", "allgather", "reduce_scatter", "all_to_all")
    return "comm" if any(w in low for w in says) else "compute"


def gpu_activity(path):
    """(name, cat) of every X event of a GPU category, read from the file with json."""
    with (gzip.open if path.name.endswith(".gz") else open)(path, "rt") as f:
        doc = json.load(f)
    events = doc if isinstance(doc, list) else doc.get("traceEvents", [])
    return {(e.get("name"), e["cat"]) for e in events
            if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") in GPU_CATS}


@pytest.mark.parametrize("path", all_shared_files())
def test_every_gpu_activity_has_its_kind(path, tmp_path):
    run = tracekit.ingest([path], tmp_path / "run", ranks={str(path): 0}, jobs=1)
    rows = run.sql("SELECT DISTINCT name, cat, kind FROM gpu_kernels").to_pylist()
    got = {(r["name"], r["cat"]): r["kind"] for r in rows}
    assert len(got) == len(rows)  # one kind per name and category
    want = {(n, c): expected_kind(n, c) for n, c in gpu_activity(path)}
    assert got == want
