"""tracekit: PyTorch Profiler (Kineto) traces of distributed training -> Parquet + DuckDB answers.

    run = tracekit.ingest(["traces/"], "run/")
    run.sql("SELECT rank, count(*) FROM events GROUP BY rank")
"""

__version__ = "0.1.0"

from .errors import TracekitError  # noqa: E402
from .api import diff, doctor, html, ingest, open, report, timeline  # noqa: E402,A004
from .store import Run  # noqa: E402

__all__ = ["Run", "TracekitError", "__version__", "diff", "doctor", "html", "ingest", "open", "report", "timeline"]
