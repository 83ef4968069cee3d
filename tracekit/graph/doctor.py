"""doctor's rows: its own query (sql/reports/doctor.sql, which reads facts only) and, where the run's events
are here, the replay's finding (sql/reports/_doctor_replay.sql: steps that do not replay). The graph is
built from the events, so a copy of a run without its events files, or a run of more events than
graph/shared.py's MAX_EVENTS (the graph is built on demand there: `tracekit report RUN replay`), gets
doctor's own rows alone."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from .. import sql_files
from ..errors import RunDamaged, TracekitError
from ..layout.damage import again, of_parts
from .shared import too_big

SEVERITY = {"error": 0, "warning": 1, "info": 2, "ok": 3}


def replay_findings(run) -> list[dict]:
    """The replay's doctor rows, or none where the graph is not built (no events here, too many); a finding
    where the run's events were cut short or removed by hand (the run is not well: no replay says so)."""
    try:
        if too_big(run) or not run.sql("SELECT 1 FROM steps LIMIT 1").num_rows:
            return []
        return run.sql(sql_files.load("reports", "_doctor_replay").text).to_pylist()
    except duckdb.IOException:  # the run's events files are not here
        return []
    except RunDamaged as exc:
        return [{"check": "damaged run", "severity": "warning", "ranks": "", "finding": f"no replay: {exc}",
                 "fix": again(getattr(run, "manifest", None))}]
    except TracekitError:
        return []


# doctor.sql's fix for missing ranks says to ingest every rank's trace; a run reduced from rank parts
# (ingest --reduce) takes a missing rank in by its part, made where it was traced, and a reduce
MISSING_PARTS = ("make the missing ranks' parts (the profiler's handler with run=RUN on those ranks, or python -m "
                 "tracekit.ingestion.rank_part TRACE RUN) and reduce again (tracekit ingest --reduce RUN): matching, "
                 "skew and stragglers need all of them")


def doctor_rows(run, params: dict) -> pa.Table:
    base = run.sql(sql_files.load("reports", "doctor").text)
    extra = replay_findings(run)
    parts = of_parts(getattr(run, "manifest", None)) and "missing ranks" in base.column("check").to_pylist()
    if not extra and not parts:
        return base
    names = base.schema.names
    rows = base.to_pylist()
    if parts:  # (the finding as the run holds them: parts, not traces)
        rows = [dict(r, finding=r["finding"].replace("no trace here", "no part in this run"), fix=MISSING_PARTS)
                if r["check"] == "missing ranks" else r for r in rows]
    if extra:
        rows = [r for r in rows if r["check"] != "all"] + [dict(zip(names, r.values(), strict=True)) for r in extra]
        rows.sort(key=lambda r: (SEVERITY.get(r["severity"], 9), r["check"]))
    return pa.Table.from_pylist(rows, schema=base.schema)
