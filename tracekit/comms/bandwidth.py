"""Bus-bandwidth factors as data, following nccl-tests (doc/PERFORMANCE.md, "Summary").

busbw = algbw x factor, algbw = bytes / time, for a group of n ranks:
factor = coeff x (n - 1) / n where ``per_rank_share``, else coeff. Point-to-point operations have one peer
whatever the group (factor 1, n may be unknown). A collective not listed (barrier, gather, scatter,
unknown) has no factor. The rows are the table ``tk_busbw_factors`` that the SQL macro tk_busbw_factor
(sql/views/macros.sql) reads; ``busbw_factor`` reads the same rows.
"""

from __future__ import annotations

# (collective, coeff, per_rank_share: times (n - 1) / n, point_to_point)
BUSBW_FACTORS: tuple[tuple[str, float, bool, bool], ...] = (
    ("allreduce", 2.0, True, False),
    ("reduce_scatter", 1.0, True, False),
    ("allgather", 1.0, True, False),
    ("alltoall", 1.0, True, False),
    ("alltoallv", 1.0, True, False),
    ("broadcast", 1.0, False, False),
    ("reduce", 1.0, False, False),
    ("send", 1.0, False, True),
    ("recv", 1.0, False, True),
    ("sendrecv", 1.0, False, True),
)
_BY_NAME = {row[0]: row[1:] for row in BUSBW_FACTORS}


def busbw_factor(collective: str, n: int | None) -> float | None:
    if collective not in _BY_NAME:
        return None
    coeff, per_rank_share, point_to_point = _BY_NAME[collective]
    if point_to_point:
        return coeff
    if n is None or n <= 0:
        return None
    return coeff * (n - 1) / n if per_rank_share else coeff
