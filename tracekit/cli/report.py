from __future__ import annotations

import inspect

import click
import pyarrow as pa

from ..api import open as api_open
from ..comms.buckets import parse_edges
from ..render import emit
from ..reports import REGISTRY, get
from .options import output_options


@click.command("report")
@click.argument("run", type=click.Path(exists=True))
@click.argument("name", required=False)
@click.option("--by", default=None, help="overlap: trace|step; exposed: rank|step|collective|group|size_bucket.")
@click.option("--limit", type=int, default=None, help="skew: rows to show, most skewed first.")
@click.option("--buckets", default=None, metavar="EDGES",
              help="Size-bucket edges, e.g. 1KiB,64KiB,1MiB [default: powers of two].")
@output_options
def report_cmd(run, name, by, limit, buckets, fmt, output):
    """Print a report; without NAME, list the reports.

    RUN is a run directory, or a trace file/directory (ingested into a cache first).

    \b
    Example:
      tracekit report run/
      tracekit report run/ summary
      tracekit report run/ overlap --by step
      tracekit report run/ exposed --by group --format csv
      tracekit report run/ collectives --buckets 64KiB,1MiB,16MiB
    """
    if name is None:
        rows = [{"report": r.name, "what": r.summary,
                 "parameters": ", ".join(f"{p.name}={p.default}" for p in r.params)} for r in REGISTRY.values()]
        emit(pa.Table.from_pylist(rows), fmt, output)
        return
    rep = get(name)
    given = {k: v for k, v in (("by", by), ("limit", limit)) if v is not None}
    table = rep.run(api_open(run, size_buckets=parse_edges(buckets)), **given)
    emit(table, fmt, output, title=f"{name} — {rep.summary}")


# `tracekit report --help` lists the reports, one line each, from the registry
report_cmd.help = inspect.cleandoc(report_cmd.help) + "\n\n\b\nReports:\n" + "\n".join(f"  {r.name:12s} {r.summary}" for r in REGISTRY.values())
