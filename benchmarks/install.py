"""Which install a benchmark measured: printed as its first line, so that a figure says what it is of."""

from __future__ import annotations

import platform
import sys


def describe() -> str:
    """tracekit's version, its compiled fast path, its gzip, the Python and the machine."""
    try:
        import tracekit
    except ImportError:  # run from a checkout without an install: this checkout's
        sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
        import tracekit
    from tracekit.ingestion import fast, source

    try:
        from importlib.metadata import version
        isal = f"ISA-L gzip (python-isal {version('isal')})"
    except Exception:
        isal = "ISA-L gzip"
    gz = isal if source._igzip is not None else "zlib gzip (python-isal missing)"
    c = "C fast path" if fast._fastscan is not None else "no C fast path (pure Python)"
    return (f"install: tracekit {tracekit.__version__} ({tracekit.__file__.rsplit('/', 2)[0]}), {c}, {gz}; "
            f"Python {platform.python_version()}, {platform.machine()}")
