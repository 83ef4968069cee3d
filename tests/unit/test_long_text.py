"""A long text cell (why_late's kernel names run to 200 characters) is cut with an ellipsis in the terminal:
a row is one line, its numbers in view, within the width given (the terminal's, $COLUMNS, or 80 in a pipe);
csv keeps it whole. (Issue 40: C++ names wrapped into 20-40 lines of a 17-character column, and a pipe got
the table at its natural width, 124-230 characters.)"""

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


def test_a_long_name_is_cut_and_its_numbers_stay_in_view_in_a_wide_terminal():
    assert len(NAME) > 2 * TEXT_MAX
    lines = _lines(250)  # wide enough for the whole name on one line: it is cut all the same
    (row,) = [ln for ln in lines if "void cub::" in ln]
    assert "0.041" in row and "0.047" in row  # the row's numbers on its line
    assert max(len(ln) for ln in lines) < TEXT_MAX + 60  # the name's column, not the name, sets the width
    assert NAME[:TEXT_MAX - 1] + "…" in row  # cut where its column ends, said by the ellipsis


def test_in_a_pipe_too(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    print_rich(TABLE)  # stdout is not a terminal here: 80 characters
    lines = capsys.readouterr().out.splitlines()
    (row,) = [ln for ln in lines if "void cub::" in ln]
    assert "0.041" in row and "…" in row and max(len(ln) for ln in lines) <= 80


def test_columns_sets_the_width_of_a_pipe(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    print_rich(TABLE)
    assert max(len(ln) for ln in capsys.readouterr().out.splitlines()) <= 60


def test_csv_keeps_the_name_whole():
    from tracekit.render import to_csv
    assert NAME in to_csv(TABLE)


def test_whole_microseconds_print_as_integers(capsys):
    """Also seen in issue 40: skew printed integer microseconds (the traces' resolution) as '41,730.000'. A
    µs column of whole numbers prints them as integers; one with a fraction, and other units, keep 3 decimals."""
    t = pa.table({"wait_us": [41730.0, 12.0, None], "skew_us": [1.5, 2.0, 3.0], "step_ms": [3.0, 4.0, 5.0]})
    buf = io.StringIO()
    print_rich(t, None, Console(file=buf, width=100))
    rows = [[c.strip() for c in ln.split("│")[1:-1]] for ln in buf.getvalue().splitlines() if ln.startswith("│")]
    assert rows == [["41,730", "1.500", "3.000"], ["12", "2.000", "4.000"], ["", "3.000", "5.000"]]


def test_a_note_is_wrapped_at_spaces_in_a_terminal(capsys, monkeypatch):
    """Also seen in issue 40: critical_path's note was one 420-character line, broken mid-word by the
    terminal. In a terminal a note is wrapped at spaces to its width; in a pipe it stays one line."""
    import sys

    from tracekit.render import emit
    from tracekit.table_meta import NOTE_KEY
    note = " ".join(f"word{i}" for i in range(80))  # 470 characters
    t = pa.table({"x": [1]}).replace_schema_metadata({NOTE_KEY: note.encode()})
    emit(t, "csv")
    assert capsys.readouterr().err == note + "\n"
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "60")
    emit(t, "csv")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) > 5 and max(map(len, lines)) <= 60 and " ".join(lines) == note


def test_the_pages_hidden_columns_are_not_the_shown_ones_again():
    """Also seen in issue 40: the page printed the advise table twice (the first columns, then 'the whole
    table'). Where only columns are left out, the click shows those, beside each row's key."""
    import html5lib

    from tracekit.html_tables import table
    t = pa.table({"priority": [1, 2], "finding": ["a", "b"], "evidence": ["e1", "e2"], "sql": ["s1", "s2"]})
    doc = html5lib.parse(table(t, ["priority", "finding"]), namespaceHTMLElements=False)
    heads = [[th.text for th in tab.iter("th")] for tab in doc.iter("table")]
    assert heads == [["priority", "finding"], ["priority", "evidence", "sql"]]
    assert doc.find(".//summary").text == "2 more columns: evidence, sql"


def _findings_table():
    evidence = " ".join(f"rank {r} waited {r * 1.25:.3f} ms at c10d::allreduce_ of 7 MiB" for r in range(12))
    return pa.table({"priority": [1], "finding": ["late ranks"], "saving_ms": [8.927], "saving_pct": [55.767],
                     "where": ["ProfilerStep#3"], "evidence": [evidence], "change": ["fix rank 3"],
                     "confidence": ["measured"]})


def test_advise_and_doctor_blocks_fit_a_pipe(capsys, monkeypatch):
    """Also seen in issue 40: advise's and doctor's finding blocks were 100 characters wide in a pipe, where
    the tables take 80 (or $COLUMNS). Every word of the evidence is still there, wrapped."""
    from tracekit.render.findings import print_findings
    t = _findings_table()
    monkeypatch.delenv("COLUMNS", raising=False)
    print_findings(t, "advise")
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 80
    assert " ".join(" ".join(ln.split()) for ln in lines).count("waited") == 12
    monkeypatch.setenv("COLUMNS", "60")
    print_findings(t, "advise")
    assert max(map(len, capsys.readouterr().out.splitlines())) <= 60
