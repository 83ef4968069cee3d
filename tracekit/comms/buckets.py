"""Message-size buckets: powers of two by default, or edges the user gives; human labels."""

from __future__ import annotations

import re

from ..errors import TracekitError

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1000, "KIB": 1 << 10, "M": 1 << 20, "MB": 1000 ** 2,
          "MIB": 1 << 20, "G": 1 << 30, "GB": 1000 ** 3, "GIB": 1 << 30, "T": 1 << 40, "TIB": 1 << 40}


def human_bytes(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            v = n / size
            return f"{v:g} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} B"


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in _UNITS:
        raise TracekitError(f"cannot read {text!r} as a size: use e.g. 4096, 64KiB, 1MiB, 2GB")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def power_of_two_edges(max_exp: int = 44) -> list[int]:
    return [0] + [1 << k for k in range(max_exp + 1)]


def bucket_rows(edges: list[int] | None = None) -> list[tuple[int, int | None, str, int]]:
    """(lo_bytes, hi_bytes, label, order) for each bucket [lo, hi); the last one is open-ended."""
    edges = sorted(set(edges if edges is not None else power_of_two_edges()))
    if not edges or edges[0] != 0:
        edges = [0] + edges
    rows = []
    for i, lo in enumerate(edges):
        hi = edges[i + 1] if i + 1 < len(edges) else None
        if hi is None:
            label = f"≥ {human_bytes(lo)}"
        elif lo == 0 and hi == 1:
            label = "0 B"
        else:
            label = f"{human_bytes(lo)}–{human_bytes(hi)}"
        rows.append((lo, hi, label, i))
    return rows


def parse_edges(spec: str | None) -> list[int] | None:
    """'1KiB,64KiB,1MiB' -> [1024, 65536, 1048576]; None/'' -> None (powers of two)."""
    if not spec:
        return None
    return [parse_size(p) for p in spec.split(",") if p.strip()]
