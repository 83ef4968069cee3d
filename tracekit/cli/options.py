"""Options shared by several subcommands, declared once."""

from __future__ import annotations

import os

import click

from ..render import FORMATS

COLUMNS_META = "tracekit.columns"  # where --columns leaves its choice (click's ctx.meta): chosen_columns()


def _columns(ctx, _param, value):
    if value:
        ctx.meta[COLUMNS_META] = [c.strip() for c in value.split(",") if c.strip()]
    return value


def chosen_columns() -> list[str] | None:
    """The command line's --columns, if the running command has one (output_options)."""
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get(COLUMNS_META) if ctx is not None else None


def emit(table, fmt: str, output: str | None = None, title: str | None = None) -> None:
    """render.emit with the command line's --columns: what every command that prints a table calls."""
    from ..render import emit as render_emit

    render_emit(table, fmt, output, title, columns=chosen_columns())


def output_options(f):
    f = click.option("--columns", default=None, metavar="A,B,C", expose_value=False, callback=_columns,
                     help="Only these columns, in this order (every format).")(f)
    f = click.option("-o", "--output", "output", type=click.Path(dir_okay=False), default=None,
                     callback=lambda _ctx, _param, value: value if value is None else check_output(value),
                     help="Write to this file instead of stdout (its missing folders are made).")(f)
    f = click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, callback=_format,
                     help="Output format; json is a list of row objects. Default: from -o's suffix (.csv, .json, "
                          ".md, .parquet), else table.")(f)
    return f


SUFFIX_FORMATS = {".csv": "csv", ".json": "json", ".md": "markdown", ".markdown": "markdown", ".parquet": "parquet"}


def format_for(output: str | None) -> str:
    """The format an output file's name asks for (``-o rows.csv``: csv); table for stdout or another name."""
    if output is None:
        return "table"
    return SUFFIX_FORMATS.get(os.path.splitext(output)[1].lower(), "table")


def _format(ctx, _param, value):
    # click processes the options given on the command line first, in their order, so -o is known here
    # unless it comes after an explicit --format (then value is not None)
    return value if value is not None else format_for(ctx.params.get("output"))


class RunPath(click.Path):
    """A run (or trace) path that must exist, or a run that an ingest killed mid-swap left beside its place
    (tracekit.open reads it there; click checks a path before the command runs)."""

    def __init__(self):
        super().__init__(exists=True)

    def convert(self, value, param, ctx):
        from ..layout.objstore import is_store_url

        if is_store_url(value):  # a run in an object store: opening it says what is wrong with it
            return value
        if isinstance(value, (str, os.PathLike)) and not os.path.lexists(value):
            from ..layout.versions import left_aside
            if left_aside(os.path.realpath(value)):
                return os.fspath(value)
            # one line that says what to give (click's says the usage and no more)
            raise _NotThere(f"{os.fspath(value)!r} does not exist: give a run directory (`tracekit ingest TRACES -o "
                            "RUN` makes one from traces) or a trace file or directory")
        return super().convert(value, param, ctx)


class _NotThere(click.ClickException):
    """A run argument that names nothing: its one line, worded as tracekit's other errors, with click's exit
    code for a bad argument."""
    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


def run_argument(f_or_name):
    """The run argument of a command, declared one way: ``@run_argument`` (named run) or
    ``@run_argument("run_a")``."""
    if isinstance(f_or_name, str):
        return click.argument(f_or_name, type=RunPath())
    return click.argument("run", type=RunPath())(f_or_name)


def model_options(default_preset: str | None):
    """--preset and one flag per model dimension (analytic.config.MODEL_FIELDS, declared once)."""
    from ..analytic import PRESETS
    from ..analytic.config import MODEL_FIELDS

    def deco(f):
        for name in reversed(MODEL_FIELDS):
            flag = "--" + name.replace("_", "-")
            f = click.option(flag, name, type=str if name == "dtype" else int, default=None,
                             help={"layers": "override the preset's",
                                   "experts": "experts per MoE layer (0: dense MLP)",
                                   "top_k": "experts each token is routed to"}.get(name))(f)
        return click.option("--preset", type=click.Choice(sorted(PRESETS)), default=default_preset,
                            show_default=default_preset is not None,
                            help="a model of tracekit.analytic.PRESETS")(f)
    return deco


def plan_options(defaults: dict, exclude: tuple[str, ...] = ()):
    """One option per field of tracekit.analytic.PLAN_FIELDS but those in ``exclude`` (declared once for
    model and whatif: a new field is an option of both): an int or a choice, a bool as --flag/--no-flag;
    ``defaults``: their defaults (None: not given, the run's own)."""
    from ..analytic.config import PLAN_FIELDS

    def deco(f):
        for field in reversed([p for p in PLAN_FIELDS if p.name not in exclude]):
            default = defaults.get(field.name)
            if field.type is bool:
                f = click.option(f"{field.flag}/--no-{field.flag[2:]}", field.name, default=None, help=field.help)(f)
                continue
            kind = click.Choice([str(c) for c in field.choices]) if field.type is str and field.choices else (
                click.IntRange(min(field.choices), max(field.choices)) if field.choices else field.type)
            f = click.option(field.flag, field.name, type=kind, default=default, show_default=default is not None,
                             help=field.help)(f)
        return f
    return deco


def check_output(path: str) -> str:
    """Make the folders ``path`` is to go in, as ingest -o does; fail at once, in one line, when ``path``
    cannot be written (before any work is done). Every command's -o FILE comes here."""
    from ..errors import TracekitError
    from ..layout.paths import is_url

    if is_url(path):  # never a local folder named 's3:' (os.makedirs would make one without a word)
        raise TracekitError(f"{path}: -o writes a local file, not to a URL; write it here, then copy it there")
    d = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as exc:
        raise TracekitError(f"{path}: cannot write it (cannot make its directory {d}: {exc.strerror})") from None
    if not os.access(d, os.W_OK):
        raise TracekitError(f"{path}: cannot write it (its directory {d} is not writable)")
    return path
