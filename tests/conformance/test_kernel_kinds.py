"""Every kernel name in ../shared/traces with its kind, pinned in tests/data/kernel_kinds.csv.

A new trace or a rule change shows up here as a diff; regenerate the file on purpose with
`python -m tests.conformance.kernel_kinds > tests/data/kernel_kinds.csv` and review it.
"""

import csv
import pathlib

from tests.conftest import shared_traces
from tests.conformance.kernel_kinds import kernel_kinds

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "data" / "kernel_kinds.csv"


def test_every_kernel_name_has_the_pinned_kind(tmp_path):
    shared_traces()
    with open(GOLDEN, newline="") as f:
        golden = sorted(tuple(r) for r in list(csv.reader(f))[1:])
    got = kernel_kinds(tmp_path)
    assert got == golden
    for name, cat, kind in got:
        is_nccl = "nccl" in name.lower() or "rccl" in name.lower()
        # PyTorch symmetric memory's multicast all-reduce (torch/csrc/distributed/c10d/symm_mem/
        # CUDASymmetricMemoryOps.cu), in tracelens_b200_eager: communication that is not NCCL's
        is_symm_mem = "::multimem_all_reduce_kernel<" in name
        assert (kind == "comm") == (is_nccl or is_symm_mem), name
        assert (kind == "memory") == (cat in ("gpu_memcpy", "gpu_memset") or name.startswith(("Memcpy", "Memset")))
