"""tracekit's settings from environment variables, each read here and nowhere else.

Read when asked (not at import), so a change of the environment takes effect. A value that cannot be
read is a one-line error naming the variable and the value; an unset or empty variable is its default.

  TRACEKIT_CACHE              directory of the run cache (default ~/.cache/tracekit)
  TRACEKIT_CACHE_MAX_MB       the run cache's cap, megabytes (default 4096)
  TRACEKIT_MAX_EVENT_MB       most bytes one event (or the gap between two) may take, MB (default 64)
  TRACEKIT_DERIVE_MEMORY_MB   DuckDB's memory for one rank's facts, and for sorting one rank's events
                              in `tracekit timeline`, MB (default 256, at least 64)
  TRACEKIT_DASK_WAIT_S        seconds ingest --scheduler waits for a Dask worker (at the start, or after
                              every worker left) or for a lost scheduler to come back (default 60)
  TRACEKIT_ZLIB               1: decompress gzip with Python's zlib even when ISA-L is installed
  TRACEKIT_PURE_PYTHON        1: ingest on the pure-Python path, not the compiled one
  TRACEKIT_COMM_KERNELS       CSV files of communication-kernel patterns, os.pathsep-separated (see
                              tracekit/comms/comm_kernels.py; a bad file is an error naming the file)
  TRACEKIT_DEBUG              1: an internal error shows its traceback
"""

from __future__ import annotations

import os

from .errors import TracekitError

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None or value.strip() == "" else value.strip()


def _number(name: str, default: float, *, integer: bool, minimum: float, unit: str = "megabytes") -> float:
    raw = _raw(name)
    if raw is None:
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        value = None
    if value is None or value != value or value in (float("inf"), float("-inf")) or value < minimum:
        kind = "a whole number" if integer else "a number"
        raise TracekitError(f"{name}={raw!r}: not {kind} of {unit} of at least {minimum:g}; set it to e.g. "
                            f"{default:g}, or unset it for the default ({default:g})")
    return value


def _flag(name: str) -> bool:
    raw = _raw(name)
    if raw is None:
        return False
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise TracekitError(f"{name}={raw!r}: not a switch; set it to 1 (on) or 0 (off), or unset it")


def cache_dir() -> str:
    return _raw("TRACEKIT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "tracekit")


def cache_max_bytes() -> float:
    return _number("TRACEKIT_CACHE_MAX_MB", 4096, integer=False, minimum=0) * 1e6


def max_event_bytes() -> int:
    return int(_number("TRACEKIT_MAX_EVENT_MB", 64, integer=True, minimum=1)) << 20


def derive_memory_mb() -> int:
    return int(_number("TRACEKIT_DERIVE_MEMORY_MB", 256, integer=True, minimum=64))


def dask_wait_s() -> float:
    return _number("TRACEKIT_DASK_WAIT_S", 60, integer=False, minimum=1, unit="seconds")


def use_zlib() -> bool:
    return _flag("TRACEKIT_ZLIB")


def pure_python() -> bool:
    return _flag("TRACEKIT_PURE_PYTHON")


def comm_kernel_catalogues() -> str:
    """The user's catalogue files, os.pathsep-separated as given ('' for none)."""
    return _raw("TRACEKIT_COMM_KERNELS") or ""


def debug() -> bool:
    """Read where an error is being reported already: a value that is not a switch counts as on."""
    try:
        return _flag("TRACEKIT_DEBUG")
    except TracekitError:
        return True


def check() -> None:
    """Read every setting once, so that a bad one stops a command before it starts its work (not in a
    worker process halfway through)."""
    cache_dir()
    cache_max_bytes()
    max_event_bytes()
    derive_memory_mb()
    dask_wait_s()
    use_zlib()
    pure_python()
