from __future__ import annotations

import inspect

import click
import pyarrow as pa

import tracekit

from ..reports import REGISTRY, get
from .options import emit, output_options, run_argument


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
@output_options
def report_cmd(run, name, buckets, fmt, output, **params):
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
    emit(table, fmt, output, title=f"{name} — {rep.summary}")


# `tracekit report --help` lists the reports, one line each, from the registry
report_cmd.help = (inspect.cleandoc(report_cmd.help) + "\n\n\b\nReports:\n"
                   + "\n".join(f"  {r.name:12s} {r.summary}" for r in REGISTRY.values()))
