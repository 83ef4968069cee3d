"""Datasheet figures of links and NCCL, in one place: the prior of a network law where a run measures
nothing of a group (tracekit.analytic.netlaw) and advise's bandwidth check."""

from __future__ import annotations

# NVLink bandwidth per GPU and direction, GB/s, by GPU name (NVIDIA's datasheets); NCCL's allreduce bus
# bandwidth reaches about 80 % of it inside one node
NVLINK_GBPS = (("B200", 900.0), ("B100", 900.0), ("H200", 450.0), ("H100", 450.0), ("A100", 300.0),
               ("V100-SXM", 150.0))
NVLINK_EFFICIENCY = (0.5, 0.8)  # NCCL's bus bandwidth as a share of the datasheet figure: low, typical
NCCL_LATENCY_US = (5.0, 10.0, 30.0)  # NCCL's per-collective latency: low, typical, high (ring/tree, LL/Simple)


def nvlink_gbps(gpu_name: str | None) -> float | None:
    """The datasheet NVLink figure of a GPU model (None: PCIe, no GPU, or a GPU not listed)."""
    gpu = gpu_name or ""
    if not gpu or "PCIe" in gpu:
        return None
    return next((bw for name, bw in NVLINK_GBPS if name in gpu), None)
