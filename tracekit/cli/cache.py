from __future__ import annotations

import click

import tracekit

from .. import cache
from ..render import emit
from ..words import plural
from .options import output_options


@click.group("cache")
def cache_cmd():
    """The cache of runs that opening trace files directly fills (~/.cache/tracekit or $TRACEKIT_CACHE;
    capped at $TRACEKIT_CACHE_MAX_MB, default 4096, least recently used first out).

    \b
    Example:
      tracekit cache list
      tracekit cache clear
    """


@cache_cmd.command("list")
@output_options
def list_cmd(fmt, output):
    """The cached runs, most recently used first."""
    table = tracekit.cache_list()
    if not table.num_rows:
        click.echo(f"{cache.root()}: empty")
        return
    emit(table, fmt, output, title=f"cache — {cache.root()}")


@cache_cmd.command("clear")
def clear_cmd():
    """Remove every cached run: the cache's own run-<16 hex> directories that carry tracekit's marker and that
    no process is reading or writing. Anything else in the cache folder (a run-1/ of yours), traces and runs
    elsewhere are never touched."""
    done = tracekit.cache_clear()
    removed, busy = done["removed"], done["busy"]
    left = f"; left {busy:,} that another tracekit process is writing or reading" if busy else ""
    click.echo(f"{cache.root()}: removed {plural(removed, 'cached run', 'cached runs')}{left}")
