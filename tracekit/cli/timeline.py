from __future__ import annotations

import click

import tracekit

from ..errors import TracekitError
from ..words import plural
from .options import check_output, run_argument


@click.command("timeline")
@run_argument
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False),
              help="The merged trace to write (.json or .json.gz).")
@click.option("--steps", default=None, metavar="A:B",
              help="Keep only steps A to B, or step A alone (--steps 5); kernels go by their launching step. "
                   "Steps the run does not have are an error naming those it has.")
@click.option("--kernels-only", is_flag=True, help="Only comm and compute kernels (no CPU ops): for large jobs.")
@click.option("--ranks", "ranks", default=None, metavar="A:B",
              help="Keep only ranks A to B (or rank A alone): for large jobs.")
def timeline_cmd(run, out, steps, kernels_only, ranks):
    """One Chrome/Perfetto trace of the whole job: a process per rank with its GPU streams and CPU
    threads, plus tracekit's tracks: exposed communication, one slice per collective instance across
    its ranks with flow arrows between them, and the rank that arrived last marked.

    \b
    Example:
      tracekit timeline run/ -o job.json.gz
      tracekit timeline run/ -o job.json.gz --steps 3:4 --kernels-only
      tracekit timeline run/ -o step5.json.gz --steps 5
      tracekit timeline run/ -o first-host.json.gz --steps 5 --ranks 0:7
    """
    check_output(out)
    counts = tracekit.timeline(run, out, _range("--steps", steps), kernels_only, _range("--ranks", ranks))
    click.echo(f"{out}: {plural(counts['kernels'], 'kernel', 'kernels')}, "
               f"{plural(counts['cpu_ops'], 'CPU op', 'CPU ops')}, "
               f"{plural(counts['instances'], 'collective instance', 'collective instances')}, "
               f"{plural(counts['exposed'], 'exposed slice', 'exposed slices')}; "
               "open it in https://ui.perfetto.dev or chrome://tracing")


def _range(option: str, text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    a, sep, b = text.partition(":")
    if not (a.isdigit() and (b.isdigit() or not sep)):
        raise TracekitError(f"{option} {text}: expected A:B (or A), e.g. {option} 3:4")
    return int(a), int(b or a)
