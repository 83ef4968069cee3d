"""The dependency graph's views computed once for a command that reads them several times (the page: the
critical path, doctor's replay finding and advise's replays; advise: its split and its replays): as
temporary tables that shadow graph_nodes and graph_edges (tracekit/shadow.py). Above
MAX_EVENTS events, or where the run has no events files or no steps, nothing is computed (each reader
then says why it has no graph)."""

from __future__ import annotations

import duckdb

from ..errors import TracekitError

MAX_EVENTS = 5_000_000  # above this, the graph is built on demand only (tracekit report RUN replay)
VIEWS = ("graph_nodes", "graph_edges")


def event_count(run) -> int:
    return run.sql("SELECT coalesce(sum(event_count), 0) AS n FROM traces").column("n")[0].as_py()


def too_big(run) -> str | None:
    """Why the graph is not built for a command of the whole run (None where it is)."""
    events = event_count(run)
    if events > MAX_EVENTS:
        return (f"the graph of {events:,} events is built on demand, not for this command (over {MAX_EVENTS:,}): "
                "`tracekit report RUN replay` and `tracekit report RUN critical_path`")
    return None


def computed_once(run):
    """Within the block, graph_nodes and graph_edges are read from tables made once (tracekit/shadow.py);
    nothing is made above MAX_EVENTS or where the run has no steps."""
    from ..shadow import computed_once as shadowed

    try:
        wanted = too_big(run) is None and run.sql("SELECT 1 FROM steps LIMIT 1").num_rows > 0
    except (TracekitError, duckdb.Error):
        wanted = False
    return shadowed(run, VIEWS if wanted else ())
