"""The Python API; the CLI is a thin skin over these functions with the same nouns."""

from __future__ import annotations

import os

from .store import Run


def _paths(paths) -> list[str]:
    return [os.fspath(p) for p in paths] if isinstance(paths, (list, tuple)) else [os.fspath(paths)]


def ingest(paths, out, *, jobs: int | None = None, on_error: str = "fail", force: bool = False,
           ranks: dict | None = None, progress: bool | None = None, scheduler: str | None = None,
           iteration: int | None = None, hosts=None, align: bool = True) -> Run:
    """Ingest trace files/directories/globs into the run directory ``out`` and open it.

    A no-op when ``out`` already holds exactly these inputs (same bytes), unless ``force``. ``scheduler``:
    a Dask scheduler address (``tcp://host:port``) or ``"local"`` (see ``tracekit ingest --scheduler``).
    ``iteration``: keep only DIR/iteration_N when the inputs hold several profiling cycles.
    ``hosts``: each rank's host where the traces do not say it: {rank or file name: host}, a mapping file,
    or N (N consecutive ranks per host). ``align=False`` keeps every host's raw clock (no offsets).
    The run's ``up_to_date`` is True when nothing had to be ingested.
    """
    built = _ingest(_paths(paths), os.fspath(out), jobs=jobs, on_error=on_error, force=force,
                    ranks=ranks, show_progress=progress, scheduler=scheduler, iteration=iteration, hosts=hosts,
                    align=align)
    run = Run(os.fspath(out))
    run.up_to_date = not built
    return run


def _ingest(paths: list[str], out: str, **options) -> bool:
    """Ingest with the executor the options ask for: a Dask cluster (``scheduler``) or a process pool."""
    from .ingestion.run_writer import ingest_run

    if options.get("scheduler"):
        from .ingestion.on_dask import run_on_dask as execute
    else:
        from .ingestion.pool import run_in_pool as execute
    return ingest_run(paths, out, execute=execute, **options)


def rederive(run) -> Run:
    """Derive the facts of the run directory ``run`` again from its own events (no traces needed), under
    the run's writer lock, as a new version switched in whole; returns the run opened."""
    from .ingestion.rederive import rederive_run

    rederive_run(os.fspath(run))
    return Run(os.fspath(run))


def open(path, size_buckets: list[int] | None = None, **ingest_options) -> Run:  # noqa: A001 - mirrors tracekit.open in the brief
    """Open a run directory; a trace file, a directory of traces or a list of them is ingested into a
    cache directory first (reused while the inputs are unchanged)."""
    from .layout.paths import to_open_as_run
    from .layout.versions import recover

    paths = _paths(path)
    if len(paths) == 1 and not os.path.exists(paths[0]):
        recover(os.path.abspath(paths[0]))  # an ingest that died mid-swap left the previous run beside it
    if len(paths) == 1 and to_open_as_run(paths[0]):
        return Run(paths[0], size_buckets=size_buckets)
    from . import cache

    out = cache.dir_for(paths)
    # the same traces opened by two processes at once: the second waits for the first's fill
    _ingest(paths, out, wait_s=cache.FILL_WAIT_S, **ingest_options)
    cache.touch(out)
    cache.enforce_cap(keep=out)
    run = Run(out, size_buckets=size_buckets)
    run.name = " ".join(paths)  # messages name the traces as the user gave them, not the cache's directory
    return run


def report(run, name: str, **params):
    """Run the report ``name`` (see ``tracekit.reports.REGISTRY``) on a Run or a path -> pyarrow.Table."""
    from .reports import run_report

    return run_report(_run(run), name, **params)


def _run(run) -> Run:
    return run if isinstance(run, Run) else open(run)


def doctor(run):
    """Health checks of a run (the `doctor` report): one row per finding with its severity and a fix."""
    return report(run, "doctor")


def diff(run_a, run_b, steps_by: str = "order"):
    """Run B against run A -> {"collectives": pyarrow.Table (per collective x process group x size bucket),
    "steps": pyarrow.Table (per profiled step, paired by ``steps_by``: "order" or "number")}."""
    from .diff_runs import diff as _diff

    return _diff(_run(run_a), _run(run_b), steps_by=steps_by)


def timeline(run, out, steps: tuple[int, int] | None = None, kernels_only: bool = False,
             ranks: tuple[int, int] | None = None) -> dict:
    """Write one Chrome/Perfetto trace of the whole job to ``out`` (``ranks``: only ranks A to B); returns
    what it holds."""
    from .timeline_trace import write_timeline

    return write_timeline(_run(run), os.fspath(out), steps, kernels_only, ranks)


def html(run, out) -> str:
    """Write the one-page HTML report of a run to ``out``."""
    from .html_report import write_html

    return write_html(_run(run), os.fspath(out))


def advise(run):
    """Ranked findings: what to change first, with the saving per step, the evidence and the change to try
    (``tracekit advise``; docs/advise.md) -> pyarrow.Table."""
    from .advise_findings import advise as _advise

    return _advise(_run(run))

