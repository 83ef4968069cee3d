"""The rule graph: which `.sql` rule runs at which stage, in which order, and the small tables and macros
every connection that runs them has.

Stages: per-rank facts (derived at ingest from one rank's events), the reduce (derived once at the end
of ingest, across ranks, from the per-rank facts), views (computed when a run is opened, from events or
facts), reports (one query each, tracekit/reports).
"""

from __future__ import annotations

import functools
import hashlib

from . import sql as _sql
from .comms.bandwidth import BUSBW_FACTORS
from .comms.buckets import bucket_rows
from .comms.comm_kernels import comm_kernel_rows
from .comms.dtypes import dtype_rows
from .kernel_families import family_rows

# Derived per rank at ingest, in this order (each may use the ones before it).
FACTS: list[str] = ["steps", "gpu_kernels", "comm_ops", "_collectives", "comm_intervals", "step_windows",
                    "comm_segments", "comm_overlap", "_comm_exposure"]
# Derived once per run at the end of ingest (the reduce step), from the per-rank collectives.
REDUCED: list[str] = ["collective_waits", "collective_instances", "stragglers"]
# The public views, in this order (later views may use earlier ones). Those in FACTS and REDUCED are read
# from facts/; the others are computed when a run is opened, from events (flows, thread_names, counters)
# or from the facts (collectives' size buckets, exposure labels).
VIEWS: list[str] = ["flows", "thread_names", "counters", "gpu_kernels", "steps", "comm_ops", "collectives",
                    "comm_intervals", "step_windows", "comm_segments", "comm_overlap", "comm_exposure",
                    "collective_waits", "collective_instances", "stragglers", "step_breakdown", "clock_offsets",
                    "rank_clocks"]
# Derived at the reduce step too, before REDUCED uses it: each host's clock offset (tracekit.clocks).
CLOCKS = "clock_offsets"
HELPERS: list[str] = ["_collectives", "_comm_exposure"]
# The tables a run stores as ingest writes them (events, traces, process_groups): see tracekit/layout.
TABLE_NAMES: list[str] = ["events", "traces", "process_groups"]

# Small tables of facts registered on every connection: name -> ([(column, SQL type, meaning)], rows).
FACT_TABLES = {
    "tk_dtypes": [("spelling", "VARCHAR", "dtype as a trace spells it"),
                  ("canonical", "VARCHAR", "canonical dtype name"), ("bytes", "BIGINT", "bytes per element"),
                  ("kernel_suffix", "BOOLEAN", "NCCL spells the dtype so at the end of a kernel's name (_f32, _bf16)")],
    "tk_busbw_factors": [("collective", "VARCHAR", "collective"),
                         ("coeff", "DOUBLE", "the factor, or its coefficient when per_rank_share"),
                         ("per_rank_share", "BOOLEAN", "the factor is coeff x (n - 1) / n for a group of n ranks"),
                         ("point_to_point", "BOOLEAN", "one peer: the factor is coeff whatever the group")],
    "tk_size_buckets": [("lo_bytes", "BIGINT", "lower edge, bytes (inclusive)"),
                        ("hi_bytes", "BIGINT", "upper edge, bytes (exclusive)"), ("label", "VARCHAR", "human label"),
                        ("bucket_order", "INTEGER", "sort order")],
    "tk_comm_kernels": [("rule_order", "INTEGER", "the first pattern a kernel name matches wins"),
                        ("pattern", "VARCHAR",
                         "kernel name pattern (SQL LIKE, case-blind: % any text, _ any one character)"),
                        ("library", "VARCHAR",
                         "nccl, rccl, msccl, mscclpp, deepep, nvshmem, symm_mem, userbuffers, custom_ar, ..."),
                        ("kind", "VARCHAR", "collective, p2p, ep_dispatch, ep_combine or sync"),
                        ("collective", "VARCHAR",
                         "the collective the name says (NULL: read it from the name, see tk_collective)"),
                        ("source", "VARCHAR", "the public source that names the kernel")],
    "tk_kernel_families": [("rule_order", "INTEGER", "the first pattern a kernel name matches wins"),
                           ("pattern", "VARCHAR", "kernel name pattern (SQL LIKE, case-blind, backslash escapes _)"),
                           ("family", "VARCHAR", "gemm, attention or elementwise (a name no pattern matches: other)"),
                           ("why", "VARCHAR", "what the pattern catches")],
}


def stored(name: str) -> bool:
    """The rule's rows are stored in the run (facts/NAME), derived at ingest."""
    return name in FACTS or name in REDUCED or name == CLOCKS


def uses(name: str, among: list[str]) -> list[str]:
    """The rules among ``among`` that rule ``name`` reads."""
    return [d for d in _sql.names_in(_sql.load("views", name).text, among) if d != name]


def references(text: str, exclude: str | None = None) -> list[str]:
    """The public views and helpers a SQL text names (comments aside), in VIEWS order."""
    return [v for v in _sql.names_in(text, VIEWS + HELPERS) if v != exclude]


def facts_key() -> str:
    """Changes whenever a rule that the stored facts depend on changes (the .sql rules, the dtype table,
    the communication-kernel catalogue with the user's rows): a run whose facts carry another key must be
    derived again from its events (``tracekit ingest --rederive``) before it is opened."""
    return _facts_key(tuple(r[:5] for r in comm_kernel_rows()))


@functools.lru_cache(maxsize=8)
def _facts_key(catalogue: tuple) -> str:
    h = hashlib.sha256(_sql.load("views", "macros").text.encode())
    for name in FACTS + REDUCED + ["rank_clocks", "_collectives_aligned"]:
        h.update(_sql.load("views", name).text.encode())
    h.update(repr(dtype_rows()).encode())
    h.update(repr(BUSBW_FACTORS).encode())
    h.update(repr(catalogue).encode())
    h.update(b"clocks 1")  # tracekit.clocks' estimator
    return h.hexdigest()[:16]


def define_base(con, size_buckets: list[int] | None = None) -> None:
    """The fact tables and macros every connection has, run or single rank."""
    rows = {"tk_dtypes": dtype_rows(), "tk_busbw_factors": list(BUSBW_FACTORS),
            "tk_size_buckets": bucket_rows(size_buckets), "tk_comm_kernels": comm_kernel_rows(),
            "tk_kernel_families": family_rows()}
    for name, cols in FACT_TABLES.items():
        con.execute(f"CREATE TABLE {name} ({', '.join(f'{c} {t}' for c, t, _ in cols)})")
        if rows[name]:  # one statement (executemany runs one per row: most of a small rank's derive time)
            values = ", ".join(f"({', '.join('?' * len(cols))})" for _ in rows[name])
            con.execute(f"INSERT INTO {name} VALUES {values}", [v for row in rows[name] for v in row])
    con.execute(_sql.load("views", "macros").text)
