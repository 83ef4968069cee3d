"""Bus-bandwidth factors, following nccl-tests' conventions (doc/PERFORMANCE.md).

algbw = bytes / time; busbw = algbw x factor(n): allreduce 2(n-1)/n; allgather, reduce_scatter and
alltoall(v) (n-1)/n; broadcast, reduce, send, recv, sendrecv 1. The views use the SQL macro
tk_busbw_factor (sql/views/macros.sql); this is its reference, and a test keeps the two equal.
"""

from __future__ import annotations

COLLECTIVES = ("allreduce", "allgather", "reduce_scatter", "broadcast", "reduce", "alltoall", "alltoallv",
               "send", "recv", "sendrecv", "barrier", "gather", "scatter", "unknown")


def busbw_factor(collective: str, n: int | None) -> float | None:
    if collective in ("send", "recv", "sendrecv"):
        return 1.0  # one peer, whatever the group
    if n is None or n <= 0:
        return None
    if collective == "allreduce":
        return 2 * (n - 1) / n
    if collective in ("allgather", "reduce_scatter", "alltoall", "alltoallv"):
        return (n - 1) / n
    if collective in ("broadcast", "reduce", "send", "recv", "sendrecv"):
        return 1.0
    return None
