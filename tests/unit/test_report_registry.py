"""The report registry: a report is its .sql header alone (tracekit/reports/declared.py), the registry is the
folder's files, and the limit is the runner's (a query that mentions $limit is refused)."""

from __future__ import annotations

import os

import duckdb
import pyarrow as pa
import pytest

import tracekit
from tracekit import sql_files as tksql
from tracekit.reports import REGISTRY
from tracekit.reports.declared import ReportHeaderError, scan
from tracekit.table_meta import note_of

HEAD = ("-- r: a crafted report\n-- @stage report\n-- @uses steps\n-- @summary ten numbers\n"
        "-- @column i: a number, count\n")


def _scan(text: str, name: str = "r"):
    return scan([tksql.parse(name, text, "reports"), tksql.parse("_helper", "-- _helper: x\nSELECT 1", "reports")])


class FakeRun:
    """What Report.run reads of a run: its ranks and a SQL entry point (here a bare DuckDB connection)."""

    ranks = [0, 1]

    def __init__(self):
        self.con = duckdb.connect()
        self.con.execute("CREATE TABLE steps (step INT)")

    def sql(self, text, params=None):
        return self.con.execute(text, params or {}).to_arrow_table()


def test_the_registry_is_the_folder_s_reports():
    """Every .sql file of tracekit/sql/reports not starting with _ is a report, and nothing else is."""
    folder = os.path.join(os.path.dirname(tracekit.__file__), "sql", "reports")
    files = sorted(f[:-4] for f in os.listdir(folder) if f.endswith(".sql") and not f.startswith("_"))
    assert list(REGISTRY) == files
    assert {"summary", "skew", "breakdown", "doctor"} <= set(files)


def test_a_header_declares_parameters_first_columns_and_left_out():
    rep = _scan(HEAD + "-- @param by = b [a|b]: how to split\n-- @param limit = 3: rows\n-- @first i\n"
                "-- @left_out _helper\nSELECT i FROM range(10) t(i) WHERE $by = $by")["r"]
    assert (rep.summary, rep.first, rep.left_out) == ("ten numbers", ("i",), "_helper")
    assert [(p.name, p.default, p.choices, p.help) for p in rep.params] == [
        ("by", "b", ("a", "b"), "how to split"), ("limit", 3, None, "rows")]


def test_the_runner_cuts_at_the_limit_and_says_how_many_it_left_out():
    rep = _scan(HEAD + "-- @param limit = 3: rows to show (0: all)\nSELECT i FROM range(10) t(i) ORDER BY i DESC")["r"]
    t = rep.run(FakeRun())
    assert t["i"].to_pylist() == [9, 8, 7]
    assert note_of(t) == "3 of 10 rows shown; --limit 0 shows all"
    assert rep.run(FakeRun(), limit=0)["i"].to_pylist() == list(range(9, -1, -1))
    with pytest.raises(tracekit.TracekitError, match="limit must be a whole number"):
        rep.run(FakeRun(), limit=-1)


@pytest.mark.parametrize("body", ["SELECT i FROM range(10) t(i) LIMIT CASE WHEN $limit = 0 THEN NULL ELSE $limit END",
                                  "SELECT i FROM range(10) t(i) LIMIT $limit"])
def test_a_query_that_mentions_limit_is_refused(body):
    """Before the rule a `LIMIT CASE ...` bound $limit to NULL and returned no rows without a word."""
    with pytest.raises(ReportHeaderError, match=r"tracekit/sql/reports/r\.sql: the query mentions \$limit"):
        _scan(HEAD + "-- @param limit = 3: rows\n" + body)


@pytest.mark.parametrize("extra, body, message", [
    ("", "SELECT $by AS i", r"binds \$by, which no @param declares"),
    ("-- @parm by = a: typo\n", "SELECT 1 AS i", "unknown header tag @parm"),
    ("-- @param by = c [a|b]: x\n", "SELECT 1 AS i", "default 'c' is not among its choices a|b"),
    ("-- @param by: no default\n", "SELECT 1 AS i", "write it as '-- @param NAME = DEFAULT"),
    ("-- @first i, j\n", "SELECT 1 AS i", "@first j: not one of its @column names"),
    ("-- @left_out _nothing\n", "SELECT 1 AS i", "@left_out _nothing: no helper query"),
    ("-- @python no_function\n", "SELECT 1 AS i", "write it as package.module:function"),
])
def test_a_broken_header_is_an_error_naming_the_file_and_the_rule(extra, body, message):
    with pytest.raises(ReportHeaderError, match=r"tracekit/sql/reports/r\.sql: .*" + message):
        _scan(HEAD + extra + body)


def test_a_report_needs_a_summary_and_its_columns():
    with pytest.raises(ReportHeaderError, match="needs '-- @summary ONE LINE'"):
        _scan("-- r: x\n-- @stage report\n-- @column i: n\nSELECT 1 AS i")
    with pytest.raises(ReportHeaderError, match="one '-- @column name: meaning, unit' line per column"):
        _scan("-- r: x\n-- @stage report\n-- @summary s\nSELECT 1 AS i")


def python_rows(run, params):
    """A report computed in Python (the @python hook): it gets the run and the bound parameters."""
    return pa.table({"i": list(range(params["n"]))[::-1]})


def test_a_report_computed_in_python_gets_the_run_and_its_parameters():
    rep = _scan(HEAD + "-- @param n = 6: how many\n-- @param limit = 4: rows\n"
                "-- @python tests.unit.test_report_registry:python_rows\n")["r"]
    t = rep.run(FakeRun(), n=5)
    assert t["i"].to_pylist() == [4, 3, 2, 1]
    assert note_of(t) == "4 of 5 rows shown; --limit 0 shows all"
