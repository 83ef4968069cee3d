"""Options shared by several subcommands, declared once."""

from __future__ import annotations

import click

from ..render import FORMATS


def output_options(f):
    f = click.option("-o", "--output", "output", type=click.Path(dir_okay=False), default=None,
                     help="Write to this file instead of stdout.")(f)
    f = click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
                     help="Output format; json is a list of row objects.")(f)
    return f


def run_argument(f):
    return click.argument("run", type=click.Path(exists=True))(f)
