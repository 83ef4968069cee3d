"""The rule graph: which `.sql` rule runs at which stage and in which order, read from the rules
themselves. Each file under tracekit/sql/{facts,reduce,views} declares, in its header, its stage
(``-- @stage fact|reduce|finish|view``: the folder it sits in) and what it reads (``-- @uses a, b``: other rules,
or tables no rule makes: events, traces, process_groups, clock_offsets and the tk_* tables below; the rows
of the tk_* tables that the stored rules declare go into the facts key). The
order is a topological sort of those declarations; a cycle, an unknown name, a missing or wrong stage is
a RuleGraphError when tracekit.rules is imported (a test imports it), never a hang.

Stages: per-rank facts (derived at ingest from one rank's events, stored), the reduce (derived once at
the end of ingest, across ranks, from the per-rank collectives, stored), the finish (derived after the
reduce, per rank: a rank's events and facts with the cross-rank facts, such as its waits; run partition of
ranks by partition, stored), views (computed on a connection when used: when a run is opened, or by a
reduce or finish rule). Reports (tracekit/sql/reports, ``-- @stage report``) read them and declare what they
read the same way; they are checked here, not ordered.
"""

from __future__ import annotations

import functools
import hashlib

from . import sql_files as _sql
from .comms.bandwidth import BUSBW_FACTORS
from .comms.buckets import bucket_rows
from .comms.comm_kernels import comm_kernel_rows
from .comms.dtypes import dtype_rows
from .kernel_families import family_rows

# stage -> its folder under tracekit/sql
STAGES = {"fact": "facts", "reduce": "reduce", "finish": "finish", "view": "views"}
# Each host's clock offset: derived at the reduce step in Python (tracekit.clocks), stored like a fact.
CLOCKS = "clock_offsets"
# The tables a run stores as ingest writes them (events, traces, process_groups): see tracekit/layout.
TABLE_NAMES: list[str] = ["events", "traces", "process_groups"]


class RuleGraphError(Exception):
    """The rules' declarations do not make a graph: the message names the file and what to fix."""


# The lookup tables every connection has (dtypes, busbw factors, size buckets, comm-kernel catalogue, kernel
# families: data, not derived facts): name -> [(column, SQL type, meaning)].
LOOKUP_TABLES = {
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


def order(rules: list, tables) -> list[str]:
    """The rules' names in an order where each comes after every rule it uses (``rules``: SqlFile-like,
    with name, stage, uses and folder; ``tables``: the names a rule may use that no rule makes). Among the
    rules ready at once, facts come first, then the reduce, then views, each by name."""
    by_name = {}
    for r in rules:
        where = f"tracekit/sql/{r.folder or STAGES.get(r.stage, '?')}/{r.name}.sql"
        if r.stage not in STAGES:
            raise RuleGraphError(f"{where}: its header needs -- @stage fact, reduce, finish or view (has {r.stage!r})")
        if getattr(r, "scratch", False) and r.stage != "finish":
            raise RuleGraphError(f"{where}: says @scratch, which only a finish rule may (a table of the finish)")
        if r.folder and STAGES[r.stage] != r.folder:
            raise RuleGraphError(f"{where}: says @stage {r.stage}, so it belongs in tracekit/sql/{STAGES[r.stage]}/")
        if r.name in by_name:
            raise RuleGraphError(f"{where}: a second rule named {r.name}")
        by_name[r.name] = r
    for r in rules:
        for u in r.uses:
            if u not in by_name and u not in tables:
                raise RuleGraphError(f"tracekit/sql/{STAGES[r.stage]}/{r.name}.sql: @uses {u}: no rule or table "
                                     "of that name")
            if r.stage == "fact" and u in by_name and by_name[u].stage != "fact":
                raise RuleGraphError(f"tracekit/sql/facts/{r.name}.sql: @uses {u}, a {by_name[u].stage} rule; a "
                                     "per-rank fact can use only other facts and the stored tables")
            if r.stage == "reduce" and u in by_name and by_name[u].stage == "finish":
                raise RuleGraphError(f"tracekit/sql/reduce/{r.name}.sql: @uses {u}, a finish rule; the finish "
                                     "runs after the reduce")
    rank = {stage: i for i, stage in enumerate(STAGES)}
    deps = {n: {u for u in r.uses if u in by_name and u != n} for n, r in by_name.items()}
    out: list[str] = []
    done: set[str] = set()
    while len(out) < len(by_name):
        ready = sorted((n for n in by_name if n not in done and deps[n] <= done),
                       key=lambda n: (rank[by_name[n].stage], n))
        if not ready:
            raise RuleGraphError("the rules use each other in a circle: " + " -> ".join(_cycle(deps, done)))
        out.append(ready[0])
        done.add(ready[0])
    return out


def _cycle(deps: dict, done: set) -> list[str]:
    """One circle among the rules not yet ordered, as a path that ends where it starts."""
    node = min(n for n in deps if n not in done)
    path: list[str] = []
    while node not in path:
        path.append(node)
        node = min(d for d in deps[node] if d not in done)
    return path[path.index(node):] + [node]


@functools.lru_cache(maxsize=None)
def graph() -> dict:
    """name -> its SqlFile, in the order of the graph read from tracekit/sql."""
    files = {f.name: f for f in _sql.rule_files()}
    return {n: files[n] for n in order(list(files.values()), set(TABLE_NAMES) | set(LOOKUP_TABLES) | {CLOCKS})}


# The two runs' sides a diff report compares, registered by tracekit/commands/diff.py.
DIFF_SIDES = ("side_a", "side_b")
# A report's table of one row per rank, registered by the HTML page (tracekit/html_tables.py) for its spread.
PAGE_TABLES = ("per_rank",)


def check_reports(reports: list, rules, tables) -> None:
    """Each report (tracekit/sql/reports) says ``-- @stage report`` and ``-- @uses`` only rules (``rules``),
    the stored tables (``tables``), for a diff its two sides and for the HTML page its per-rank table;
    anything else is a RuleGraphError naming the file."""
    for r in reports:
        where = f"tracekit/sql/reports/{r.name}.sql"
        if r.stage != "report":
            raise RuleGraphError(f"{where}: its header needs -- @stage report (has {r.stage!r})")
        for u in r.uses:
            if u not in rules and u not in tables and u not in DIFF_SIDES + PAGE_TABLES:
                raise RuleGraphError(f"{where}: @uses {u}: no rule or table of that name")


check_reports(_sql.rule_files(("reports",)), graph(), set(TABLE_NAMES) | set(LOOKUP_TABLES) | {CLOCKS})
ORDER: list[str] = list(graph())
# Derived per rank at ingest, in this order (each may use the ones before it).
FACTS: list[str] = [n for n in ORDER if graph()[n].stage == "fact"]
# Derived once per run at the end of ingest (the reduce step), from the per-rank collectives.
REDUCED: list[str] = [n for n in ORDER if graph()[n].stage == "reduce"]
# Derived per rank after the reduce (from a rank's events and facts and the cross-rank facts), a partition of
# ranks at a time: what a report would otherwise compute from every rank's kernels or events when asked.
FINISHED: list[str] = [n for n in ORDER if graph()[n].stage == "finish"]
# Finish rules made tables during the finish for the rules after them, not stored (``-- @scratch``): a run
# computes them as views when a query names them.
SCRATCH: list[str] = [n for n in FINISHED if graph()[n].scratch]
# The public views (every public rule, stored or not, and the clock offsets); helpers start with _.
VIEWS: list[str] = [n for n in ORDER if not n.startswith("_")] + [CLOCKS]
HELPERS: list[str] = [n for n in ORDER if n.startswith("_")]


def views_for(names: list[str]) -> list[str]:
    """The view rules that ``names`` read, directly or through other views, in graph order (a reduce rule
    reads rank_clocks and _collectives_aligned: they are defined on the reduce's connection first; a finish
    rule reads comm_exposure)."""
    need: set[str] = set()
    todo = [u for n in names for u in graph()[n].uses]
    while todo:
        u = todo.pop()
        if u in graph() and graph()[u].stage == "view" and u not in need:
            need.add(u)
            todo += graph()[u].uses
    return [n for n in ORDER if n in need]


def stored(name: str) -> bool:
    """The rule's rows are stored in the run (facts/NAME), derived at ingest."""
    return name in FACTS or name in REDUCED or (name in FINISHED and name not in SCRATCH) or name == CLOCKS


def uses(name: str, among: list[str] | None = None) -> list[str]:
    """What rule ``name`` declares it reads (``-- @uses``): rules, stored facts and tables; only those in
    ``among`` when given."""
    return [d for d in graph()[name].uses if among is None or d in among]


def _rank_finish_rules() -> list[str]:
    """The finish rules that read one rank's facts and events only (no cross-rank fact), in order: a rank
    part derives them where it is made (derive.derive_rank's finish_dir), the reduce reads them."""
    out: list[str] = []
    for name in FINISHED:
        if all(u in FACTS or u == "events" or u.startswith("tk_") or u in out for u in uses(name)):
            out.append(name)
    return out


RANK_FINISH = _rank_finish_rules()  # _lead_ups, _lead_up_parts, _step_pieces, _step_segments (the timeline's sweep)


def references(query: str, strings: bool = True) -> list[str]:
    """The public views and helpers a user's query names (comments aside), in VIEWS order: the views to
    define before it runs. (Rules declare theirs, ``-- @uses``.)"""
    return _sql.names_in(query, VIEWS + HELPERS, strings=strings)


# Columns of the tk_* tables that only explain a row (where a pattern comes from, why it is there): a
# change to them changes no fact, so they stay out of the facts key.
_EXPLAINING = {"source", "why"}


def _fact_table_rows(size_buckets: list[int] | None = None) -> dict:
    """name -> rows of each tk_* table, as every connection registers them."""
    return {"tk_dtypes": dtype_rows(), "tk_busbw_factors": list(BUSBW_FACTORS),
            "tk_size_buckets": bucket_rows(size_buckets), "tk_comm_kernels": comm_kernel_rows(),
            "tk_kernel_families": family_rows()}


def fact_tables_read() -> list[str]:
    """The tk_* tables the stored facts depend on: those the stored rules and the views they read declare
    (``-- @uses``), and those the macros read (macros.sql, which every rule may call)."""
    stored_rules = FACTS + REDUCED + FINISHED
    declared = {u for n in stored_rules + views_for(stored_rules) for u in uses(n) if u in LOOKUP_TABLES}
    macros = set(_sql.names_in(_sql.load("", "macros").text, list(LOOKUP_TABLES)))
    return sorted(declared | macros)


def facts_key() -> str:
    """Changes whenever something the stored facts depend on changes: the .sql rules they come from, the
    macros, and the rows of every tk_* table those declare they read (the catalogues with the user's
    rows). A run whose facts carry another key must be derived again from its events (``tracekit ingest
    --rederive``) before it is opened."""
    return _key(tuple(FACTS + REDUCED + FINISHED), _tables_read())


def part_key() -> str:
    """facts_key() of what a rank part derives (the per-rank facts and RANK_FINISH): a part made by a
    tracekit whose cross-rank or finish rules differ stays usable, since the reduce derives those itself
    (at 4,096 ranks, making the parts again is most of an hour of the job's hosts)."""
    return _key(tuple(FACTS + RANK_FINISH), _tables_read())


def _tables_read() -> tuple:
    """The rows of every catalogue a stored fact depends on (fact_tables_read), as the keys hash them."""
    rows = _fact_table_rows()
    tables = []
    for name in fact_tables_read():
        keep = [i for i, (col, _, _) in enumerate(LOOKUP_TABLES[name]) if col not in _EXPLAINING]
        tables.append((name, tuple(tuple(r[i] for i in keep) for r in rows[name])))
    return tuple(tables)


@functools.lru_cache(maxsize=8)
def _key(rules: tuple, tables: tuple) -> str:
    h = hashlib.sha256(_sql.load("", "macros").text.encode())
    for name in list(rules) + views_for(list(rules)):
        h.update(_sql.rule(name).text.encode())
    h.update(repr(tables).encode())
    h.update(b"clocks 1")  # tracekit.clocks' estimator
    return h.hexdigest()[:16]


def define_base(con, size_buckets: list[int] | None = None) -> None:
    """The fact tables and macros every connection has, run or single rank."""
    rows = _fact_table_rows(size_buckets)
    for name, cols in LOOKUP_TABLES.items():
        con.execute(f"CREATE TABLE {name} ({', '.join(f'{c} {t}' for c, t, _ in cols)})")
        if rows[name]:  # one statement (executemany runs one per row: most of a small rank's derive time)
            values = ", ".join(f"({', '.join('?' * len(cols))})" for _ in rows[name])
            con.execute(f"INSERT INTO {name} VALUES {values}", [v for row in rows[name] for v in row])
    con.execute(_sql.load("", "macros").text)
