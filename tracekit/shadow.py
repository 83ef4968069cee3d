"""Views computed once for a command that reads them many times: temporary tables of the same names that
shadow them on the run's connection (DuckDB resolves a name in the temporary schema first), dropped when
the command is done. The page (the collectives and their exposure), advise (step_breakdown) and both (the
dependency graph: tracekit/graph/shared.py) use it. Nested blocks share what an outer one made."""

from __future__ import annotations

import contextlib

import duckdb

from .errors import TracekitError


@contextlib.contextmanager
def computed_once(run, names):
    """Within the block, each view of ``names`` is read from a table made once. Where one cannot be made (a
    read-only run; a view that cannot be computed here) it and those after it stay views: each query
    computes them, or explains why it cannot."""
    held = run.__dict__.setdefault("_tk_shadowed", {})
    made = []  # (name, made by this block)
    try:
        for name in names:
            if held.get(name):
                held[name] += 1
                made.append((name, False))
                continue
            try:
                run.sql(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT * FROM main.{name}")
            except (TracekitError, duckdb.Error):
                break
            held[name] = 1
            made.append((name, True))
        yield
    finally:
        for name, own in reversed(made):
            held[name] -= 1
            if own and not held[name]:
                with contextlib.suppress(TracekitError, duckdb.Error):
                    run.sql(f"DROP TABLE IF EXISTS temp.{name}")
