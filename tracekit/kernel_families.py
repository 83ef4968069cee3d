"""Compute kernels by family (gemm, attention, elementwise; every other is 'other'), from a name table
shipped as data (kernel_families.csv: pattern, family, why). The first pattern a name matches wins (SQL
LIKE, case-blind, backslash escapes _); the table is registered as tk_kernel_families on every connection
and used by the step_breakdown view (sql/views/step_breakdown.sql)."""

from __future__ import annotations

import csv
import functools
import io
from importlib import resources

FAMILIES = ("gemm", "attention", "elementwise", "other")


@functools.lru_cache(maxsize=1)
def family_rows() -> list[tuple[int, str, str, str]]:
    """(rule_order, pattern, family, why) for the tk_kernel_families table."""
    text = resources.files(__package__).joinpath("kernel_families.csv").read_text()
    rows = [(i + 1, r["pattern"], r["family"], r["why"]) for i, r in enumerate(csv.DictReader(io.StringIO(text)))]
    bad = [r for r in rows if r[2] not in FAMILIES]
    if bad:
        raise ValueError(f"kernel_families.csv: unknown family {bad[0][2]!r} (families: {', '.join(FAMILIES)})")
    return rows
