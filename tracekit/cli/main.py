"""``tracekit`` entry point: subcommands registered here; errors become messages and exit codes."""

from __future__ import annotations

import os
import sys

# tracekit does no linear algebra: numpy's OpenBLAS need not start a thread per core (they spin: about
# 0.15 s of CPU in an ingest). Set before numpy is imported; a user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import click  # noqa: E402

from .. import __version__  # noqa: E402
from ..errors import TracekitError  # noqa: E402
from .cache import cache_cmd  # noqa: E402
from .diff import diff_cmd  # noqa: E402
from .doctor import doctor_cmd  # noqa: E402
from .html import html_cmd  # noqa: E402
from .timeline import timeline_cmd  # noqa: E402
from .whatif import whatif_cmd  # noqa: E402
from .ingest import ingest_cmd  # noqa: E402
from .model import model_cmd  # noqa: E402
from .plot import plot_cmd  # noqa: E402
from .report import report_cmd  # noqa: E402
from .schema import schema_cmd  # noqa: E402
from .sql import sql_cmd  # noqa: E402
from .validate import validate_cmd  # noqa: E402

COMMANDS = [ingest_cmd, sql_cmd, schema_cmd, report_cmd, validate_cmd, model_cmd, plot_cmd, cache_cmd, doctor_cmd, diff_cmd,
            timeline_cmd, html_cmd, whatif_cmd]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tracekit")
def cli():
    """tracekit: answers about communication from PyTorch Profiler traces of distributed training.

    \b
    Start here:
      tracekit ingest traces/ -o run/
      tracekit sql run/ "SELECT name, count(*) FROM events GROUP BY name ORDER BY 2 DESC LIMIT 10"
    """


for _cmd in COMMANDS:
    cli.add_command(_cmd)


def main(argv=None) -> int:  # noqa: C901
    try:
        cli.main(args=argv, prog_name="tracekit", standalone_mode=False)
    except TracekitError as exc:
        click.echo(f"error: {exc}", err=True)
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("interrupted: nothing was written (an earlier run, if any, is intact)", err=True)
        return 130
    except KeyboardInterrupt:
        click.echo("interrupted: nothing was written (an earlier run, if any, is intact)", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug, not bad input: say so briefly; TRACEKIT_DEBUG=1 shows the traceback
        import os
        if os.environ.get("TRACEKIT_DEBUG"):
            raise
        click.echo(f"internal error: {type(exc).__name__}: {exc}\n(a tracekit bug: rerun with TRACEKIT_DEBUG=1 "
                   "for the traceback and report it)", err=True)
        return 70
    return 0


if __name__ == "__main__":
    sys.exit(main())
