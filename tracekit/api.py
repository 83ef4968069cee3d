"""The Python API; the CLI is a thin skin over these functions with the same nouns."""

from __future__ import annotations

import os

from .ingestion.run_writer import ingest_run
from .store import Run, open_run


def ingest(paths, out, *, jobs: int | None = None, on_error: str = "fail", force: bool = False,
           ranks: dict | None = None, progress: bool | None = None, scheduler: str | None = None,
           iteration: int | None = None, hosts=None, align: bool = True) -> Run:
    """Ingest trace files/directories/globs into the run directory ``out`` and open it.

    A no-op when ``out`` already holds exactly these inputs (same bytes), unless ``force``. ``scheduler``:
    a Dask scheduler address (``tcp://host:port``) or ``"local"`` (see ``tracekit ingest --scheduler``).
    ``iteration``: keep only DIR/iteration_N when the inputs hold several profiling cycles.
    ``hosts``: each rank's host where the traces do not say it: {rank or file name: host}, a mapping file,
    or N (N consecutive ranks per host). ``align=False`` keeps every host's raw clock (no offsets).
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    ingest_run([os.fspath(p) for p in paths], os.fspath(out), jobs=jobs, on_error=on_error, force=force,
               ranks=ranks, show_progress=progress, scheduler=scheduler, iteration=iteration, hosts=hosts,
               align=align)
    return Run(os.fspath(out))


def open(path, **ingest_options) -> Run:  # noqa: A001 - mirrors tracekit.open in the brief
    """Open a run directory (or ingest a trace file/directory into the cache and open that)."""
    return open_run(path, **ingest_options)


def report(run, name: str, **params):
    """Run the report ``name`` (see ``tracekit.reports.REGISTRY``) on a Run or a path -> pyarrow.Table."""
    from .reports import run_report

    if not isinstance(run, Run):
        run = open_run(run)
    return run_report(run, name, **params)


def _run(run) -> Run:
    return run if isinstance(run, Run) else open_run(run)


def doctor(run):
    """Health checks of a run (the `doctor` report): one row per finding with its severity and a fix."""
    return report(run, "doctor")


def diff(run_a, run_b, steps_by: str = "order"):
    """Run B against run A -> {"collectives": pyarrow.Table (per collective x process group x size bucket),
    "steps": pyarrow.Table (per profiled step, paired by ``steps_by``: "order" or "number")}."""
    from .compare import diff as _diff

    return _diff(_run(run_a), _run(run_b), steps_by=steps_by)


def timeline(run, out, steps: tuple[int, int] | None = None, kernels_only: bool = False,
             ranks: tuple[int, int] | None = None) -> dict:
    """Write one Chrome/Perfetto trace of the whole job to ``out`` (``ranks``: only ranks A to B); returns
    what it holds."""
    from .merged_trace import write_timeline

    return write_timeline(_run(run), os.fspath(out), steps, kernels_only, ranks)


def html(run, out) -> str:
    """Write the one-page HTML report of a run to ``out``."""
    from .html_report import write_html

    return write_html(_run(run), os.fspath(out))


def advise(run):
    """Ranked findings: what to change first, with the saving per step, the evidence and the change to try
    (``tracekit advise``; docs/advise.md) -> pyarrow.Table."""
    from .advise import advise as _advise

    return _advise(_run(run))
