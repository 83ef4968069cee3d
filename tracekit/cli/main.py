"""``tracekit`` entry point: subcommands registered here; errors become messages and exit codes."""

from __future__ import annotations

import os
import sys

# tracekit does no linear algebra: numpy's OpenBLAS need not start a thread per core (they spin: about
# 0.15 s of CPU in an ingest). Set before numpy is imported; a user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import importlib  # noqa: E402 - these four after OPENBLAS_NUM_THREADS is set (above)

import click  # noqa: E402

from .. import __version__  # noqa: E402
from ..errors import TracekitError  # noqa: E402

# The subcommands, in the order `--help` lists them: name -> the module and the click command in it, imported
# when it runs (`tracekit ingest` loads the ingest path only). The one list of commands; each calls the
# tracekit function of its name (tracekit.__all__; tests/unit/test_api_names.py checks the pairs).
COMMAND_MODULES = {
    "ingest": "ingest:ingest_cmd", "sql": "sql:sql_cmd", "schema": "schema:schema_cmd", "report": "report:report_cmd",
    "validate": "validate:validate_cmd", "model": "model:model_cmd", "plot": "plot:plot_cmd",
    "cache": "cache:cache_cmd", "doctor": "doctor:doctor_cmd", "diff": "diff:diff_cmd",
    "timeline": "timeline:timeline_cmd", "html": "html:html_cmd", "whatif": "whatif:whatif_cmd",
    "advise": "advise:advise_cmd",
}


def _command(name: str) -> click.Command:
    module, attribute = COMMAND_MODULES[name].split(":")
    return getattr(importlib.import_module(f".{module}", __package__), attribute)


class _Commands(click.Group):
    def list_commands(self, ctx):
        return list(COMMAND_MODULES)

    def get_command(self, ctx, name):
        return _command(name) if name in COMMAND_MODULES else None


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tracekit")
def cli():
    """tracekit: answers about communication from PyTorch Profiler traces of distributed training.

    \b
    Start here (TRACES: a directory of traces, one per rank; RUN: the run made):
      tracekit ingest TRACES -o RUN
      tracekit advise RUN            what to change first, each saving from the trace
      tracekit report RUN            the reports (tracekit report RUN summary, ...)
      tracekit sql RUN "SELECT name, count(*) FROM events GROUP BY name ORDER BY 2 DESC LIMIT 10"
    """


def __getattr__(name: str):
    if name == "COMMANDS":  # every command object (tests check each is documented)
        return [_command(n) for n in COMMAND_MODULES]
    raise AttributeError(name)


def one_line(message: str) -> str:
    from ..render import one_line as line  # (imported when needed: the CLI starts without pyarrow)

    return line(message)


def main(argv=None) -> int:
    rc = _main(argv)
    if argv is None:  # the command line (not a caller's process): the command is done, an interrupt now
        import signal  # would only cut the interpreter's own cleanup short

        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, signal.SIG_IGN)
        if rc == 130:  # interrupted, the run made whole and the message printed: a worker thread the
            # interrupt left running (a rule's query) must not hold the exit; the run needs nothing from it
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os._exit(rc)
    return rc


def _named(argv) -> str | None:
    """The subcommand the command line names (its first word that is not an option), if it is one."""
    words = [w for w in (sys.argv[1:] if argv is None else argv) if not w.startswith("-")]
    return words[0] if words and words[0] in COMMAND_MODULES else None


def _main(argv=None) -> int:
    from ..errors import Interrupted
    from ..ingestion.interrupts import is_interrupt, message, raise_on_sigterm

    raise_on_sigterm()
    try:
        rc = cli.main(args=argv, prog_name="tracekit", standalone_mode=False)
        if isinstance(rc, int):  # a command's own exit code (click.exceptions.Exit), e.g. doctor --fail-on
            return rc
    except Interrupted as exc:  # a write cut short: what the run holds now
        click.echo(str(exc), err=True)
        return exc.exit_code
    except TracekitError as exc:
        click.echo(f"error: {one_line(str(exc))}", err=True)
        return exc.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo(message(_named(argv)), err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug, not bad input: say so briefly; TRACEKIT_DEBUG=1 shows the traceback
        from .. import settings
        if settings.debug():
            raise
        if is_interrupt(exc):  # Ctrl-C that DuckDB reported as its own error
            click.echo(message(_named(argv)), err=True)
            return 130
        click.echo(f"internal error: {type(exc).__name__}: {one_line(str(exc))}\n(a tracekit bug: rerun with "
                   "TRACEKIT_DEBUG=1 for the traceback and report it)", err=True)
        return 70
    return 0


if __name__ == "__main__":
    sys.exit(main())
