from __future__ import annotations

import inspect

import click
import pyarrow as pa

import tracekit

from ..reports import REGISTRY, get
from .options import chosen_columns, emit, output_options, run_argument


def report_options(f):
    """One option per report parameter, generated from the reports' own declarations (Report.params):
    a parameter several reports take (--by) is one option whose help lists each report's values."""
    by_name: dict[str, list] = {}
    for rep in REGISTRY.values():
        for p in rep.params:
            by_name.setdefault(p.name, []).append((rep, p))
    for name, uses in reversed(list(by_name.items())):
        kind = type(uses[0][1].default)
        text = "; ".join(f"{rep.name}: " + ("|".join(p.choices) if p.choices else p.help)
                         + f" [default: {p.default}]" for rep, p in uses)
        f = click.option(f"--{name.replace('_', '-')}", name, type=kind if kind in (int, float) else str,
                         default=None, help=text + ".")(f)
    return f


@click.command("report")
@run_argument
@click.argument("name", required=False)
@report_options
@click.option("--buckets", default=None, metavar="EDGES",
              help="Size-bucket edges, e.g. 1KiB,64KiB,1MiB [default: powers of two].")
@click.option("--all", "every_row", is_flag=True,
              help="Every row in the terminal: above 64 ranks a per-rank report shows each number's spread and "
                   "the rows that matter most (csv, json, parquet and -o FILE always keep every row).")
@output_options
def report_cmd(run, name, buckets, every_row, fmt, output, **params):
    """Print a report; without NAME, list the reports.

    RUN is a run directory, or a trace file/directory (ingested into a cache first).

    \b
    Example:
      tracekit report run/
      tracekit report run/ summary
      tracekit report run/ overlap --by step
      tracekit report run/ exposed --by group --format csv
      tracekit report run/ collectives --buckets 64KiB,1MiB,16MiB
      tracekit report run/ skew --limit 0 --columns instance_key,start_skew_us,last_rank
    """
    if name is None:
        rows = [{"report": r.name, "what": r.summary,
                 "parameters": ", ".join(f"{p.name}={p.default}" for p in r.params)} for r in REGISTRY.values()]
        emit(pa.Table.from_pylist(rows), fmt, output)
        return
    rep = get(name)
    given = {k: v for k, v in params.items() if v is not None}
    table = tracekit.report(run, name, buckets=buckets, **given)
    title = f"{name} — {rep.summary}"
    if fmt == "table" and output is None and not every_row and rep.most:
        from ..reports.spread import PER_RANK_ROWS, ranks_in

        if ranks_in(table) > PER_RANK_ROWS and (not chosen_columns() or "rank" in chosen_columns()):
            _print_spread(table, rep, title)
            return
    emit(table, fmt, output, title=title)


def _print_spread(table: pa.Table, rep, title: str) -> None:
    """A per-rank table of a big job in the terminal: each number's spread over the rows, then the rows with
    the largest ``rep.most``, and how to get every row."""
    import sys

    from ..render import emit as render_emit
    from ..render import pick_columns
    from ..reports.spread import most_rows, rank_spread, ranks_in

    table = pick_columns(table, chosen_columns())
    n = ranks_in(table)
    rows_are = "ranks" if table.num_rows == n else "rank and step rows"
    spread = rank_spread(table)
    most = most_rows(table, rep.most) if rep.most in table.column_names else table.slice(0, 0)
    render_emit(spread, "table", title=f"{title}\n{n:,} ranks: each number's spread over the {rows_are}")
    if most.num_rows:
        render_emit(most, "table", title=f"the {most.num_rows} {rows_are} with the most {rep.most}")
    print(f"({n:,} ranks, {table.num_rows:,} rows: --all prints every row; --format csv, json or parquet keeps "
          "every row)", file=sys.stderr)


# `tracekit report --help` lists the reports, one line each, from the registry
report_cmd.help = (inspect.cleandoc(report_cmd.help) + "\n\n\b\nReports:\n"
                   + "\n".join(f"  {r.name:12s} {r.summary}" for r in REGISTRY.values()))
