"""tracekit: PyTorch Profiler (Kineto) traces of distributed training -> Parquet + DuckDB answers.

    run = tracekit.ingest(["traces/"], "run/")
    run.sql("SELECT rank, count(*) FROM events GROUP BY rank")
"""

__version__ = "0.1.0"  # the one place the version is written (pyproject.toml reads it)

from .errors import TracekitError  # after __version__, which the modules it loads import

# one function per command of the command line, of the same name (`tracekit cache list`: cache_list), and
# whatif's three uses apart: fit_laws, predict_plan, counterfactual
_API = ("advise", "cache_clear", "cache_list", "counterfactual", "diff", "doctor", "fit_laws", "html", "ingest",
        "model", "open", "plot", "predict_plan", "rederive", "reduce", "report", "schema", "sql", "timeline",
        "validate", "whatif")
__all__ = ["Run", "TracekitError", "__version__", *_API]


def __getattr__(name: str):
    """The API on first use (PEP 562): `import tracekit` stays light, so the command line can set up the
    process (e.g. OpenBLAS threads) before pyarrow, numpy and DuckDB load."""
    if name in _API:
        from . import api

        return getattr(api, name)
    if name == "Run":
        from .store import Run

        return Run
    raise AttributeError(f"module 'tracekit' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
