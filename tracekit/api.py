"""The Python API; the CLI is a thin skin over these functions with the same nouns."""

from __future__ import annotations

import os
import pathlib

from .sandbox import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S
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
    from .layout.objstore import is_store_url

    if is_store_url(out):  # built here, uploaded, published by one PUT last (layout/remote.py)
        from .ingestion.to_store import ingest_to_store as ingest_run
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


def reduce(run, *, iteration: int | None = None, hosts=None, align: bool = True) -> Run:  # noqa: A001 - `ingest --reduce`
    """Build the run directory ``run`` from the ranks' parts that ``tracekit.profiler.trace_handler(DIR,
    run=RUN)`` made (each rank's events and per-rank facts, made where it was traced): only the cross-rank
    work is done here, with the ranks present; again to take a late part in. ``iteration``: the profiling
    cycle, where the parts hold several. The run's ``reduced`` says {"ranks", "world", "missing"}."""
    from .ingestion.reduce_parts import reduce_parts

    done = reduce_parts(os.fspath(run), iteration=iteration, hosts=hosts, align=align)
    opened = Run(os.fspath(run))
    opened.reduced = done
    return opened


def open(path, size_buckets: list[int] | None = None, **ingest_options) -> Run:  # noqa: A001 - mirrors tracekit.open in the brief
    """Open a run directory; a trace file, a directory of traces or a list of them is ingested into a
    cache directory first (reused while the inputs are unchanged)."""
    from .errors import RunError
    from .layout.objstore import is_store_url
    from .layout.paths import refuse_url, to_open_as_run
    from .layout.versions import left_aside

    paths = _paths(path)
    if len(paths) == 1 and is_store_url(paths[0]):  # a run in an object store (layout/remote.py)
        return Run(paths[0], size_buckets=size_buckets)
    for p in paths:
        if is_store_url(p):
            raise RunError(f"{p}: a run in an object store opens alone (traces there are not read: copy them here "
                           "and ingest them, or ingest them where they are with -o s3://...)")
        refuse_url(p, RunError)  # a run or traces at a URL: never a local folder named 'gs:'
    # a run, or one an ingest that died mid-swap left beside its place (read there: opening never writes)
    if len(paths) == 1 and (to_open_as_run(paths[0]) or left_aside(os.path.realpath(paths[0]))):
        return Run(paths[0], size_buckets=size_buckets)
    from . import cache

    out = cache.own_dir_for(paths)
    # the same traces opened by two processes at once: the second waits for the first's fill
    _ingest(paths, out, wait_s=cache.FILL_WAIT_S, **ingest_options)
    cache.touch(out)
    cache.enforce_cap(keep=out)
    run = Run(out, size_buckets=size_buckets)
    run.name = " ".join(paths)  # messages name the traces as the user gave them, not the cache's directory
    return run


def report(run, name: str, buckets=None, **params):
    """Run the report ``name`` (see ``tracekit.reports.REGISTRY``) on a Run or a path -> pyarrow.Table.
    ``buckets``: size-bucket edges in bytes (a list, or text such as "1KiB,64KiB,1MiB") [default: the
    run's, powers of two unless opened with others]; ``params``: the report's own (``by``, ``limit``, ...)."""
    from .reports import run_report

    if buckets is not None:
        from .comms.buckets import parse_edges

        edges = parse_edges(buckets) if isinstance(buckets, str) else [int(b) for b in buckets]
        if isinstance(run, Run):  # the caller's Run keeps its own edges: these on a Run of the same version
            named, run = run.name, Run(run.version, size_buckets=edges)
            run.name = named
        else:
            run = open(run, size_buckets=edges)
    return run_report(_run(run), name, **params)


def _run(run) -> Run:
    return run if isinstance(run, Run) else open(run)


def doctor(run):
    """Health checks of a run (the `doctor` report): one row per finding with its severity and a fix."""
    return report(run, "doctor")


def diff(run_a, run_b, steps_by: str = "order"):
    """Run B against run A -> {"collectives": pyarrow.Table (per collective x process group x size bucket),
    "steps": pyarrow.Table (per profiled step, paired by ``steps_by``: "order" or "number")}."""
    from .commands.diff import diff as _diff

    return _diff(_run(run_a), _run(run_b), steps_by=steps_by)


def timeline(run, out, steps: tuple[int, int] | None = None, kernels_only: bool = False,
             ranks: tuple[int, int] | None = None) -> dict:
    """Write one Chrome/Perfetto trace of the whole job to ``out`` (``ranks``: only ranks A to B); returns
    what it holds."""
    from .commands.timeline import write_timeline

    return write_timeline(_run(run), os.fspath(out), steps, kernels_only, ranks)


def html(run, out, plotly_js: str = "inline") -> str:
    """Write the one-page HTML report of a run to ``out``; ``plotly_js="beside"`` writes the charts'
    JavaScript once beside the page (shared by the pages in that folder) instead of in it."""
    from .commands.html import write_html

    return write_html(_run(run), os.fspath(out), plotly_js)


def advise(run):
    """Ranked findings: what to change first, with the saving per step, the evidence and the change to try
    (``tracekit advise``; docs/advise.md) -> pyarrow.Table."""
    from .commands.advise import advise as _advise

    return _advise(_run(run))



def sql(run, query: str, *, timeout: float | None = DEFAULT_TIMEOUT_S,
        memory_mb: int | None = DEFAULT_MEMORY_MB, unsafe: bool = False, own_process: bool = False):
    """Run ``query`` (DuckDB SQL) over a run -> a Result read as it is consumed (``.schema``, iteration over
    pyarrow.RecordBatch, ``.read_all()`` for a pyarrow.Table; ``with`` closes it). By default it can only
    read the run (SELECT and EXPLAIN of one, no file outside the run, configuration locked) within
    ``memory_mb`` and ``timeout`` seconds (None or 0: no limit); ``unsafe`` lifts the read-only limits.
    ``own_process`` (the CLI): the process is the query's, so the limits also cap its address space and
    end it if the query outlives its time limit (sandbox.process_limits).
    A Run given is left as it was: the query runs on a connection of its own to the same version."""
    from .commands.sql import Result

    if isinstance(run, Run):  # the limits (and the close at the end) must not reach the caller's Run
        own = Run(run.version, size_buckets=run.size_buckets)
        own.name = run.name
        run = own
    return Result(_run(run), query, timeout, memory_mb, unsafe, own_process)


def schema(run, table: str | None = None):
    """Every table and view of a run with each column's type, meaning and unit; with ``table``, that table
    or view only (or a report's columns) -> pyarrow.Table."""
    from .commands.schema import schema_table

    return schema_table(_run(run), table)


def validate(run, config=None):
    """The measured collectives against the analytic model, per collective and process group ->
    pyarrow.Table. ``config``: {"model": {...}, "plan": {...}} or the path of a JSON file of one [default:
    the config the traces recorded]."""
    from .commands.validate import validate as _validate

    return _validate(_run(run), _config(config))


def _config(config):
    """A config given as a dict, or as the path of a JSON file holding one."""
    if config is None or isinstance(config, dict):
        return config
    import json

    from .errors import TracekitError

    path = os.fspath(config)
    try:
        value = json.loads(pathlib.Path(path).read_text())
    except OSError as exc:
        raise TracekitError(f"{path}: cannot read the config ({exc.strerror})") from None
    except ValueError as exc:
        raise TracekitError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise TracekitError(f"{path}: a config is a JSON object {{\"model\": {{...}}, \"plan\": {{...}}}}")
    return value


def model(preset: str = "example", *, layers: int | None = None, hidden: int | None = None,
          heads: int | None = None, vocab: int | None = None, seq: int | None = None,
          micro_batch: int | None = None, micro_batches: int | None = None, dtype: str | None = None,
          experts: int | None = None, top_k: int | None = None, **plan):
    """One training step's collectives per rank and process group from the analytic model: one row per
    (pipeline stage, group, collective), count and bytes per rank and step -> pyarrow.Table. The model is
    ``preset`` (``tracekit.analytic.PRESETS``) with the dimensions given over it; ``plan``: the plan's
    fields (tracekit.analytic.config.PLAN_FIELDS but the schedule: dp, tp, pp, ep, zero, sequence_parallel,
    backend), each one not given 1, off or nccl."""
    from .analytic import Plan
    from .analytic.config import PLAN_FIELDS
    from .commands.model import model as _model
    from .errors import TracekitError

    kinds = {f.name: f.type for f in PLAN_FIELDS if f.name != "schedule"}
    unknown = sorted(set(plan) - set(kinds))
    if unknown:
        raise TracekitError(f"model: no plan field {', '.join(unknown)}; the plan's are {', '.join(kinds)}")
    given = {k: bool(v) if kinds[k] is bool else v for k, v in plan.items() if v is not None}
    fields = {"layers": layers, "hidden": hidden, "heads": heads, "vocab": vocab, "seq": seq,
              "micro_batch": micro_batch, "micro_batches": micro_batches, "dtype": dtype, "experts": experts,
              "top_k": top_k}
    return _model(preset, fields, Plan(**{"backend": "nccl", **given}))


def fit_laws(run, plot=None):
    """The run's network laws -> pyarrow.Table: per collective and role of group, latency + bus traffic /
    bus bandwidth fitted to its clean matched instances (``tracekit whatif --fit``). ``plot``: also draw
    the laws with the measured points to this PNG."""
    from .commands import whatif as w
    from .errors import TracekitError

    r = _run(run)
    pts = w.points(r)
    laws = w.fit(r, pts)
    if not laws:
        raise TracekitError(f"{r.name}: no clean matched collective instance with a size to fit a law to; "
                            "see tracekit doctor")
    if plot:
        from .commands.plot import fitted_laws
        fitted_laws(pts, laws, os.fspath(plot))
    import pyarrow as pa
    return pa.Table.from_pylist(laws)


SWEPT_MODEL_FIELDS = ("micro_batches",)  # the model's field a sweep varies itself (--micro-batch sets the
# sequences per step the sweep holds: micro-batch x its count x dp)


def predict_plan(run, config=None, *, preset: str | None = None, world: int | None = None,
                 cores: int | None = None, sweep: bool = False, **fields):
    """The step of the run's model under its own plan or another, timed by the run's own compute and
    network -> pyarrow.Table: the step first (with its interval), then per process group and collective,
    one step on the busiest rank, predicted beside measured (``tracekit whatif``; docs/model.md).
    ``fields``: the plan's (tracekit.analytic.config.PLAN_FIELDS: dp, tp, pp, ep, zero, sequence_parallel,
    backend, schedule) and the model's (MODEL_FIELDS: layers, hidden, ...) to change; one not given is the
    run's own, and ``sequence_parallel=False`` asks for the plan without it. The plan is the run's
    (recorded, ``config``'s, or inferred from its process groups); the model the recorded one, ``config``'s
    (a dict or a JSON file's path) or ``preset``. ``world``: the number of ranks the plan is for;
    ``cores``: CPU runs, the cores a host's ranks share; ``sweep``: every valid plan for ``world`` ranks,
    ranked by predicted step."""
    from .analytic.config import MODEL_FIELDS, PLAN_FIELDS
    from .commands import whatif as w
    from .errors import TracekitError

    plan_names = [f.name for f in PLAN_FIELDS]
    unknown = sorted(set(fields) - set(plan_names) - set(MODEL_FIELDS))
    if unknown:
        raise TracekitError(f"predict_plan: no field {', '.join(unknown)}; the plan's are {', '.join(plan_names)}, "
                            f"the model's {', '.join(MODEL_FIELDS)}")
    for name, value, what in (("world", world, "the number of ranks the plan is for"),
                              ("cores", cores, "the cores a host's ranks share")):
        if value is not None and value < 1:
            raise TracekitError(f"{name} {value}: give {what}, at least 1")
    # the sweep tries every plan, and every micro-batch count that keeps the sequences per step: a plan
    # field or a micro-batch count beside it would be dropped without a word
    given = [n for n in plan_names + list(SWEPT_MODEL_FIELDS) if fields.get(n) is not None]
    if sweep and given:
        raise TracekitError(f"{', '.join(given)} with sweep: the sweep tries every plan for the world size, with "
                            "every micro-batch count; predict the plan alone, without sweep")
    r = _run(run)
    try:
        return w.whatif(r, config=_config(config), preset=preset, model={k: fields.get(k) for k in MODEL_FIELDS},
                        changes={k: fields.get(k) for k in plan_names}, world=world, cores=cores, sweep=sweep)
    except TracekitError as exc:
        raise TracekitError(f"{r.name}: {exc}") from None


def counterfactual(run, *, fix_ranks=(), comm_speedup: float | None = None, overlap=()):
    """A counterfactual replay of the run's own dependency graph (graph/counterfactual.py) -> pyarrow.Table:
    each rank's step measured, replayed as it is, and replayed with ``fix_ranks`` at the median rank's pace,
    every transfer ``comm_speedup`` times faster, ``overlap``'s groups (pg_names or roles: DP, TP, PP, EP)
    hidden behind compute (``tracekit whatif --fix-rank/--comm-speedup/--overlap``)."""
    from .commands.whatif_replay import predict

    return predict(_run(run), tuple(fix_ranks), comm_speedup, tuple(overlap))


def whatif(run, config=None, *, fit: bool = False, plot=None, fix_ranks=(), comm_speedup: float | None = None,
           overlap=(), **params):
    """``tracekit whatif``'s three uses in one call, for code written before they were apart: the fitted
    laws (``fit``/``plot``: fit_laws), a counterfactual replay (``fix_ranks``, ``comm_speedup``,
    ``overlap``: counterfactual), else a plan's step (``params``: predict_plan's)."""
    from .errors import TracekitError

    if fix_ranks or comm_speedup is not None or overlap:
        from .analytic.config import PLAN_FIELDS

        bools = {f.name for f in PLAN_FIELDS if f.type is bool}  # False asks for a plan without it
        given = [k for k, v in {"config": config, "fit": fit or None, "plot": plot, **params}.items()
                 if v is not None and v is not False or (k in bools and v is False)]
        if given:
            raise TracekitError(f"{', '.join(given)} with fix_ranks/comm_speedup/overlap: a counterfactual replays "
                                "the run's own plan (tracekit.counterfactual); ask another plan with "
                                "tracekit.predict_plan")
        return counterfactual(run, fix_ranks=fix_ranks, comm_speedup=comm_speedup, overlap=overlap)
    if fit or plot:
        laws = fit_laws(run, plot)
        if fit:
            return laws
    return predict_plan(run, config, **params)


def plot(run, out, kind: str = "sizes") -> str:
    """Draw a chart of a run to ``out``: an interactive HTML page (.html, works offline) or a PNG image
    (.png, needs matplotlib). ``kind``: "sizes" (message sizes per collective) or "overlap" (hidden and
    exposed communication per rank). Returns ``out``."""
    from .commands.plot import draw

    return draw(_run(run), os.fspath(out), kind)


def cache_list():
    """The runs in the cache that opening trace files fills, most recently used first -> pyarrow.Table
    (run, inputs, first_input, mb, last_used)."""
    import pyarrow as pa

    from . import cache
    from .table_meta import WRAP_KEY

    return pa.Table.from_pylist(cache.entries()).replace_schema_metadata({WRAP_KEY: b"run,first_input"})


def cache_clear() -> dict:
    """Remove every cached run that no process is writing or reading -> {"removed": N, "busy": M}."""
    from . import cache

    removed, busy = cache.clear()
    return {"removed": removed, "busy": busy}
