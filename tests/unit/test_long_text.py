"""A long text cell (why_late's kernel names run to 200 characters) wraps in the terminal: the numbers after
it stay on the line where the row starts, within the screen's width, in a terminal and in a pipe."""

from __future__ import annotations

import io

import pyarrow as pa
from rich.console import Console

from tracekit.render import TEXT_MAX, print_rich

NAME = ("void cub::DeviceRadixSortOnesweepKernel<cub::DeviceRadixSortPolicy<long, int, int>::Policy800, false, long, "
        "int, int, int>(int*, int*, int*, int const*, long*, long const*, int*, int const*, int, int, int)")
TABLE = pa.table({"rank": [4, 4], "kind": ["kernel", "cpu op"], "name": [NAME, "c10d::allreduce_"],
                  "late_ms": [0.047, 0.297], "diff_ms": [0.041, 0.036]})


def _lines(width: int) -> list[str]:
    buf = io.StringIO()
    print_rich(TABLE, None, Console(file=buf, width=width))
    return buf.getvalue().splitlines()


def test_a_long_name_wraps_and_its_numbers_stay_in_view_in_a_wide_terminal():
    assert len(NAME) > 2 * TEXT_MAX
    lines = _lines(250)  # wide enough for the whole name on one line: it wraps all the same
    row = next(ln for ln in lines if "void cub::" in ln)
    assert "0.041" in row and "0.047" in row  # the row's numbers on its first line
    assert max(len(ln) for ln in lines) < TEXT_MAX + 60  # the name's column, not the name, sets the width
    assert sum(1 for ln in lines if "int" in ln and "│" in ln) >= 3  # the name over three lines


def test_in_a_pipe_too(capsys):
    print_rich(TABLE)  # stdout is not a terminal here: the table at its natural width
    out = capsys.readouterr().out
    row = next(ln for ln in out.splitlines() if "void cub::" in ln)
    assert "0.041" in row and len(row) < TEXT_MAX + 60
