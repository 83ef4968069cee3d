"""Compare two runs (a regression hunt, a config change) as two tables: each run's side is a report over
its own facts (sql/reports/_diff_collectives_side.sql, _diff_steps_side.sql); the comparison joins them
(_diff_collectives.sql, _diff_steps.sql)."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from .. import sql_files as _sql
from ..errors import QueryError, TracekitError
from ..table_meta import FIRST_KEY, NOTE_KEY

STEPS_BY = ("order", "number")
# the columns a reader needs first (kept when the terminal is narrow)
FIRST = {"collectives": "collective,group,size_bucket,count_a,count_b,time_ms_a,time_ms_b,exposed_ms_delta",
         "steps": "position,step_a,step_b,step_ms_a,step_ms_b,step_ms_delta,exposed_ms_a,exposed_ms_b"}


def diff(run_a, run_b, steps_by: str = "order") -> dict[str, pa.Table]:
    """Run B against run A: {"collectives": per collective x group x size bucket, largest change first,
    "steps": per profiled step, paired by position among each run's steps (``steps_by="order"``, so that
    runs profiled at different steps line up) or by step number (``"number"``)}."""
    if steps_by not in STEPS_BY:
        raise TracekitError(f"steps_by must be one of {', '.join(STEPS_BY)}, not {steps_by!r}")
    out = {}
    for part, params in (("collectives", None), ("steps", {"steps_by": steps_by})):
        side = _sql.load("reports", f"_diff_{part}_side").text
        con = duckdb.connect()
        try:
            con.register("side_a", run_a.sql(side))
            con.register("side_b", run_b.sql(side))
            t = con.sql(_sql.load("reports", f"_diff_{part}").text, params=params).to_arrow_table()
            meta = {FIRST_KEY: FIRST[part].encode()}
            note = "; ".join(n for n in (_steps_note(run_a, run_b), _jobs_note(run_a, run_b)) if n) \
                if part == "collectives" else None
            if note:
                meta[NOTE_KEY] = note.encode()
            out[part] = t.replace_schema_metadata(meta)
        except duckdb.Error as exc:
            raise QueryError(f"diff of {run_a.name} and {run_b.name} failed: {exc}") from None
        finally:
            con.close()
    return out


def _steps_note(run_a, run_b) -> str | None:
    """Where the runs profiled different numbers of steps, the collectives' totals cover different spans:
    say so (per step, the steps table compares them)."""
    def steps(run):
        try:
            return run.sql("SELECT count(DISTINCT step) AS n FROM steps").column("n")[0].as_py()
        except TracekitError:
            return None
    a, b = steps(run_a), steps(run_b)
    if a and b and a != b:
        from ..words import plural

        return (f"A profiled {plural(a, 'step', 'steps')} and B {b}: the collectives table's counts, bytes and "
                f"times are totals over each run's steps (B's over x{b / a:.3g} as many); the steps table "
                "compares the runs step by step")
    return None


_JOB_SQL = ("SELECT count(*) AS ranks, string_agg(DISTINCT backend, ', ' ORDER BY backend) AS backend, "
            "string_agg(DISTINCT gpu_name, ', ' ORDER BY gpu_name) AS gpus FROM traces")


def _jobs_note(run_a, run_b) -> str | None:
    """Where the runs are not the same kind of job (ranks, communication backend, GPUs), the comparison is
    of unlike work: say so, with what each ran on."""
    a, b = (run.sql(_JOB_SQL).to_pylist()[0] for run in (run_a, run_b))
    if a == b:
        return None
    from ..words import plural

    def job(j):
        return (f"{plural(j['ranks'], 'rank', 'ranks')}, {j['backend'] or 'no backend recorded'}, "
                f"{j['gpus'] or 'no GPU recorded'}")
    return (f"A and B are not the same kind of job (A: {job(a)}; B: {job(b)}): the differences below are "
            "between unlike work, not a change to one job")
