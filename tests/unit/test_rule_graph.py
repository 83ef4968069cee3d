"""The rule graph is read from the rules' own headers (-- @stage, -- @uses): sorted so that each rule comes
after what it reads, and a circle or an unknown name is an error naming the file, never a hang."""

import re

import pytest

from tracekit import sql_files as tksql
from tracekit.rules import CLOCKS, FACT_TABLES, TABLE_NAMES, RuleGraphError, graph, order

TABLES = set(TABLE_NAMES) | set(FACT_TABLES) | {CLOCKS}


def rule(name, stage, uses=(), body="SELECT 1 AS x", folder=None):
    head = f"-- {name}: a crafted rule\n-- @stage {stage}\n" + (f"-- @uses {', '.join(uses)}\n" if uses else "")
    return tksql.parse(name, head + f"CREATE OR REPLACE VIEW {name} AS {body};\n",
                       folder or {"fact": "facts", "reduce": "reduce", "view": "views"}[stage])


def test_the_shipped_rules_are_sorted_by_what_their_files_say_they_read():
    g = graph()
    names = list(g)
    seen = set()
    for n in names:
        assert set(g[n].uses) - TABLES <= seen, (n, g[n].uses)  # every rule it reads comes before it
        seen.add(n)
    # and the headers tell the truth: the rules a file reads after FROM or JOIN (comments and string
    # literals aside) are exactly those it declares
    for n, f in g.items():
        text = re.sub(r"'[^']*'", "''", re.sub(r"--[^\n]*", "", f.text))
        read = {m for m in re.findall(r"\b(?:FROM|JOIN)\s+([A-Za-z_]\w*)", text, re.I) if m in g or m == CLOCKS}
        assert read - {n} == set(f.uses) - set(TABLE_NAMES) - set(FACT_TABLES), n


def test_each_stage_is_a_folder():
    for n, f in graph().items():
        assert f.folder == {"fact": "facts", "reduce": "reduce", "view": "views"}[f.stage], n


def test_a_circle_is_an_error_naming_it():
    # two views whose columns carry each other's names, and that read each other: the old word scan spun
    rules = [rule("a", "view", ["b"], "SELECT b AS a FROM b"), rule("b", "view", ["a"], "SELECT a AS b FROM a")]
    with pytest.raises(RuleGraphError, match=r"circle: a -> b -> a"):
        order(rules, TABLES)


def test_column_names_are_not_dependencies():
    rules = [rule("a", "view", [], "SELECT 1 AS b"), rule("b", "view", [], "SELECT 2 AS a")]
    assert order(rules, TABLES) == ["a", "b"]


def test_an_unknown_name_is_an_error_naming_the_file():
    with pytest.raises(RuleGraphError, match=r"tracekit/sql/views/a\.sql: @uses stepz: no rule or table"):
        order([rule("a", "view", ["stepz"])], TABLES)


def test_a_stage_must_match_its_folder_and_facts_read_only_facts():
    with pytest.raises(RuleGraphError, match=r"belongs in tracekit/sql/facts/"):
        order([rule("a", "fact", folder="views")], TABLES)
    with pytest.raises(RuleGraphError, match=r"needs -- @stage"):
        order([tksql.parse("a", "-- a: no stage\nSELECT 1", "views")], TABLES)
    with pytest.raises(RuleGraphError, match=r"a per-rank fact can use only other facts"):
        order([rule("v", "view"), rule("f", "fact", ["v"])], TABLES)


def test_the_order_is_a_topological_sort():
    rules = [rule("c", "view", ["b", "a"]), rule("b", "reduce", ["a"]), rule("a", "fact", ["events"])]
    assert order(rules, TABLES) == ["a", "b", "c"]


def test_a_query_names_the_views_outside_its_comments_only():
    """Which views a user's query needs, read by hand from the text: '--' inside a string is not a
    comment (the view after it on the same line was missed), a "quoted" name counts, comments do not."""
    from tracekit import rules

    q = "SELECT '--no-align' AS s, * FROM collectives -- step_breakdown\nJOIN \"alltoall_pairs\" USING (rank)"
    q += " /* flows */"
    assert rules.references(q) == sorted({"collectives", "alltoall_pairs"}, key=rules.VIEWS.index)
