"""Message bytes and bus-bandwidth factors, following nccl-tests' conventions (doc/PERFORMANCE.md).

- message bytes: the full buffer: for allgather the output (n x the input), for reduce_scatter the
  input (n x the output), otherwise the input.
- algbw = bytes / time; busbw = algbw x factor(n): allreduce 2(n-1)/n; allgather, reduce_scatter and
  alltoall(v) (n-1)/n; broadcast, reduce, send, recv, sendrecv 1.
"""

from __future__ import annotations

COLLECTIVES = ("allreduce", "allgather", "reduce_scatter", "broadcast", "reduce", "alltoall", "alltoallv",
               "send", "recv", "sendrecv", "barrier", "gather", "scatter", "unknown")


def busbw_factor(collective: str, n: int | None) -> float | None:
    if n is None or n <= 0:
        return None
    if collective == "allreduce":
        return 2 * (n - 1) / n
    if collective in ("allgather", "reduce_scatter", "alltoall", "alltoallv"):
        return (n - 1) / n
    if collective in ("broadcast", "reduce", "send", "recv", "sendrecv"):
        return 1.0
    return None


def message_bytes(collective: str, in_nelems: int | None, out_nelems: int | None, elem_bytes: int | None):
    if elem_bytes is None:
        return None
    nelems = out_nelems if collective == "allgather" else in_nelems
    if nelems is None:
        nelems = in_nelems if in_nelems is not None else out_nelems
    return None if nelems is None else nelems * elem_bytes
