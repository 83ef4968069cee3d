"""The rule graph is read from the rules' own headers (-- @stage, -- @uses): sorted so that each rule comes
after what it reads, and a circle or an unknown name is an error naming the file, never a hang."""

import re

import pytest

from tracekit import sql_files as tksql
from tracekit.kernel_families import family_rows as _family_rows
from tracekit.rules import CLOCKS, DIFF_SIDES, LOOKUP_TABLES, PAGE_TABLES, TABLE_NAMES, RuleGraphError, graph, order

TABLES = set(TABLE_NAMES) | set(LOOKUP_TABLES) | {CLOCKS}


def rule(name, stage, uses=(), body="SELECT 1 AS x", folder=None):
    head = f"-- {name}: a crafted rule\n-- @stage {stage}\n" + (f"-- @uses {', '.join(uses)}\n" if uses else "")
    return tksql.parse(name, head + f"CREATE OR REPLACE VIEW {name} AS {body};\n",
                       folder or {"fact": "facts", "reduce": "reduce", "finish": "finish", "view": "views"}[stage])


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
        read = {m for m in _read(f) if m in g or m == CLOCKS or m in LOOKUP_TABLES}
        assert read - {n} == set(f.uses) - set(TABLE_NAMES), n  # tk_* tables too: they are in the facts key


def test_a_view_that_reads_events_says_so():
    """A run binds events only when a query or a view's header names it (-- @uses): a view reading events
    that did not declare it (counters, flows, thread_names did not) failed on a fresh run with no table
    named events."""
    views = [f for f in graph().values() if f.stage == "view"]
    readers = [f.name for f in views if "events" in _read(f)]
    assert {"counters", "flows", "thread_names"} <= set(readers)
    for name in readers:
        assert "events" in graph()[name].uses, name


READABLE = set(graph()) | TABLES | set(DIFF_SIDES) | set(PAGE_TABLES)  # what a report may read


def _read(f) -> set:
    """The rules and stored tables a file reads after FROM or JOIN, comments and string literals aside,
    found by hand from its text (CTE names and a diff's sides are neither)."""
    text = re.sub(r"'[^']*'", "''", re.sub(r"--[^\n]*", "", f.text))
    return set(re.findall(r"\b(?:FROM|JOIN)\s+([A-Za-z_]\w*)", text, re.I))


def test_every_report_says_what_it_reads():
    """A report's header names exactly the rules it reads (and every stored table it reads): one that read
    an undeclared view would pass unseen by the graph."""
    reports = tksql.rule_files(("reports",))
    assert len(reports) >= 20  # tracekit/sql/reports: 21 files today
    for f in reports:
        assert f.stage == "report", f.name
        if f.tag("python"):  # its rows come from Python (tracekit/reports/declared.py): no query to read
            continue
        assert _read(f) & READABLE == set(f.uses), f.name


def test_a_report_that_reads_an_undeclared_view_fails_the_check():
    """The check above on a crafted report: reading comm_exposure while declaring only steps."""
    text = ("-- r: a crafted report\n-- @stage report\n-- @uses steps\n"
            "SELECT * FROM steps JOIN comm_exposure USING (rank)\n")
    f = tksql.parse("r", text, "reports")
    assert _read(f) & READABLE == {"steps", "comm_exposure"} != set(f.uses)


def test_a_report_header_names_only_rules_and_tables():
    from tracekit.rules import check_reports

    with pytest.raises(RuleGraphError, match=r"tracekit/sql/reports/r\.sql: @uses stepz: no rule or table"):
        check_reports([tksql.parse("r", "-- r: x\n-- @stage report\n-- @uses stepz\nSELECT 1", "reports")],
                      graph(), TABLES)
    with pytest.raises(RuleGraphError, match=r"tracekit/sql/reports/r\.sql: its header needs -- @stage report"):
        check_reports([tksql.parse("r", "-- r: x\nSELECT 1", "reports")], graph(), TABLES)


def test_each_stage_is_a_folder():
    for n, f in graph().items():
        assert f.folder == {"fact": "facts", "reduce": "reduce", "finish": "finish", "view": "views"}[f.stage], n


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
    with pytest.raises(RuleGraphError, match=r"reduce/r\.sql: @uses f, a finish rule"):
        order([rule("f", "finish"), rule("r", "reduce", ["f"])], TABLES)


def test_a_finish_rule_comes_after_the_reduce_it_reads():
    rules = [rule("v", "view", ["f"]), rule("f", "finish", ["r", "a"]), rule("r", "reduce", ["a"]),
             rule("a", "fact", ["events"])]
    assert order(rules, TABLES) == ["a", "r", "f", "v"]


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


def test_only_a_finish_rule_may_be_scratch():
    """-- @scratch: a table of the finish's connection, not stored; a fact or a view saying it is an error
    naming the file."""
    f = tksql.parse("s", "-- s: a crafted rule\n-- @stage finish\n-- @scratch\nCREATE OR REPLACE VIEW s AS SELECT 1;\n",
                    "finish")
    assert f.scratch and not rule("t", "finish").scratch
    order([f], TABLES)
    v = tksql.parse("v", "-- v: a crafted rule\n-- @stage view\n-- @scratch\nCREATE OR REPLACE VIEW v AS SELECT 1;\n",
                    "views")
    with pytest.raises(RuleGraphError, match=r"tracekit/sql/views/v\.sql: says @scratch, which only a finish rule"):
        order([v], TABLES)


def test_the_facts_key_hashes_every_catalogue_a_stored_rule_reads(monkeypatch):
    """_step_pieces reads tk_kernel_families: kernel_families.csv is in the facts key (it was not: after
    the catalogue changed, an old run opened as current). The other tables the stored rules or the macros
    read are in it too; what only explains a row (why a pattern is there) is not, nor tk_size_buckets, which
    only the view collectives reads (computed when asked; no stored rule reads that view since step_breakdown
    reads _collectives)."""
    from tracekit import rules

    assert set(rules.fact_tables_read()) == {"tk_dtypes", "tk_busbw_factors", "tk_comm_kernels", "tk_kernel_families"}
    before = rules.facts_key()
    rows = _family_rows()
    order_, pattern, family, why = rows[0]
    other = next(f for f in ("gemm", "attention", "elementwise") if f != family)
    monkeypatch.setattr(rules, "family_rows", lambda: [(order_, pattern, other, why)] + rows[1:])
    assert rules.facts_key() != before
    monkeypatch.setattr(rules, "family_rows", lambda: [(order_, pattern, family, why + " (reworded)")] + rows[1:])
    assert rules.facts_key() == before


def test_a_run_of_another_kernel_catalogue_refuses_to_open(tmp_path, monkeypatch, capsys):
    """A run whose facts were derived with another kernel_families.csv is not taken as current: it refuses
    with the --rederive hint, and after --rederive it opens."""
    from tests.conftest import dist, write_trace
    from tracekit import rules
    from tracekit.cli.main import main

    write_trace(tmp_path / "rank0.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1,
                                           "dur": 1, "args": {"stream": 7}}], header=dist(0, world=1))
    run = tmp_path / "run"
    assert main(["ingest", str(tmp_path / "rank0.json"), "-o", str(run)]) == 0
    rows = _family_rows()
    order_, pattern, family, why = rows[0]
    other = next(f for f in ("gemm", "attention", "elementwise") if f != family)
    monkeypatch.setattr(rules, "family_rows", lambda: [(order_, pattern, other, why)] + rows[1:])
    capsys.readouterr()
    assert main(["sql", str(run), "SELECT 1 AS x"]) == 4  # RunError
    assert capsys.readouterr().err == (f"error: {run}: its facts were derived by other rules than this tracekit's; "
                                       f"derive them again from its events with `tracekit ingest --rederive {run}`\n")
    assert main(["ingest", "--rederive", str(run)]) == 0
    assert main(["sql", str(run), "SELECT 1 AS x", "--format", "csv"]) == 0


def test_a_part_keeps_its_key_when_only_the_reduce_s_rules_change(monkeypatch):
    """A rank part derives the per-rank facts and the finish's per-rank tables only (the reduce derives the
    rest from them): its key (rules.part_key) changes with those rules, not with a cross-rank or finish rule
    the reduce derives, which the run's key (facts_key) follows. Each rule's text changed in turn (a
    comment added: any change of the text is a change of the rule)."""
    import dataclasses

    from tracekit import rules

    real = tksql.rule
    before = (rules.facts_key(), rules.part_key())

    def keys_with(changed: str) -> tuple[str, str]:
        monkeypatch.setattr(tksql, "rule", lambda name: dataclasses.replace(real(name), text=real(name).text + "\n-- x")
                            if name == changed else real(name))
        rules._key.cache_clear()
        try:
            return rules.facts_key(), rules.part_key()
        finally:
            monkeypatch.setattr(tksql, "rule", real)
            rules._key.cache_clear()

    # the rules a part derives: _collectives is a per-rank fact, _step_segments the finish's per-rank sweep
    assert "_collectives" in rules.FACTS and "_step_segments" in rules.RANK_FINISH
    for name in ("_collectives", "_step_segments"):
        fk, pk = keys_with(name)
        assert fk != before[0] and pk != before[1], name
    # what only the reduce derives: a cross-rank fact, a finish rule reading one
    assert "collective_instances" in rules.REDUCED and "step_breakdown" not in rules.RANK_FINISH
    for name in ("collective_instances", "step_breakdown"):
        fk, pk = keys_with(name)
        assert fk != before[0] and pk == before[1], name
    assert (rules.facts_key(), rules.part_key()) == before
