"""Where one file's ingest spends its CPU: the parse, then each per-rank rule and its Parquet write, then
each cross-rank (reduce) rule and each finish rule, one at a time, in the order derive runs them.

    python benchmarks/profile_ingest.py TRACE [--threads 2] [--repeat 3] [--explain RULE]

Process CPU seconds (user + system, every thread of the process: DuckDB's and Arrow's too) and wall
seconds of each step; a rule's figures are the lowest CPU of --repeat runs (the machines are shared: CPU
time varies less than wall time with the load, and the least is the closest to the rule's own cost).
The rules run here one after another, where ingest runs two at once beside the Parquet writes; the sum
is the work, not ingest's wall time. --explain prints DuckDB's EXPLAIN ANALYZE of one rule (its
operators' times are wall times, inflated by profiling and by the load: read them for shape, not cost).
For the comparison with HTA, see bench_ingest.py.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import resource
import shutil
import sys
import tempfile
import time

import duckdb

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from tracekit.clocks import OFFSETS_SCHEMA
from tracekit.ingestion.one_file import ingest_file, release_memory
from tracekit.layout.bind import bind_events, sql_string
from tracekit.rules import CLOCKS, FACTS, FINISHED, REDUCED, define_base, views_for
from tracekit.run_tables import PG_SCHEMA, TRACES_SCHEMA, rows_table
from tracekit.sql_files import rule as load_rule


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(fn) -> tuple[float, float]:
    c, w = cpu(), time.perf_counter()
    fn()
    return cpu() - c, time.perf_counter() - w


def rule(con, name: str, out: str, repeat: int, explain: str | None) -> tuple[int, float, float, float, float]:
    """(rows, rule CPU, rule wall, write CPU, write wall) of one rule, its table left on ``con``."""
    if name == explain:
        con.execute(load_rule(name).text)
        print(con.execute(f"EXPLAIN ANALYZE SELECT * FROM {name}").fetchall()[0][1])
        con.execute(f"DROP VIEW {name}")
    best = None
    for _ in range(max(1, repeat)):
        con.execute(f"DROP TABLE IF EXISTS {name}")
        con.execute(load_rule(name).text)
        run = timed(lambda: con.execute(f"CREATE TABLE _m_{name} AS SELECT * FROM {name}"))
        con.execute(f"DROP VIEW {name}")
        con.execute(f"ALTER TABLE _m_{name} RENAME TO {name}")
        write = timed(lambda: con.execute(f"COPY {name} TO {sql_string(out)} (FORMAT parquet)"))
        if best is None or run[0] + write[0] < best[0][0] + best[1][0]:
            best = (run, write)
    (rows,) = con.execute(f"SELECT count(*) FROM {name}").fetchall()[0]
    return rows, best[0][0], best[0][1], best[1][0], best[1][1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", help="one trace file (.json or .json.gz)")
    ap.add_argument("--threads", type=int, default=2, help="decode threads and DuckDB threads (ingest: the cores)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each rule; the lowest CPU is printed")
    ap.add_argument("--explain", default=None, help="print EXPLAIN ANALYZE of this rule")
    args = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="tk-profile-")
    try:
        part = os.path.join(work, "events", "part-0.parquet")
        os.makedirs(os.path.dirname(part))
        got = []
        parse = timed(lambda: got.append(ingest_file(args.trace, part, rank=0, threads=args.threads)))
        res = got[0]
        release_memory()
        print(f"{'step':28} {'rows':>10} {'CPU s':>7} {'wall s':>7}")
        print(f"{'parse (events Parquet)':28} {res.trace['event_count']:10,} {parse[0]:7.3f} {parse[1]:7.3f}")
        con = duckdb.connect(config={"threads": args.threads, "memory_limit": "256MB",
                                     "temp_directory": os.path.join(work, "_spill")})
        bind_events(con, files=res.parts, rank=0)
        con.register("_traces", rows_table([res.trace], TRACES_SCHEMA))
        con.register("_pgs", rows_table(res.process_groups, PG_SCHEMA))
        con.execute("CREATE TABLE traces AS SELECT * FROM _traces")
        con.execute("CREATE TABLE process_groups AS SELECT * FROM _pgs")
        define_base(con)
        total = [0.0, 0.0]
        for stage, names in (("fact", FACTS), ("reduce", REDUCED), ("finish", FINISHED)):
            if stage == "reduce":
                con.register("_no_offsets", rows_table([], OFFSETS_SCHEMA))
                con.execute(f"CREATE TABLE {CLOCKS} AS SELECT * FROM _no_offsets")
            for name in views_for(names):
                con.execute(load_rule(name).text)
            for name in names:
                rows, rc, rw, wc, ww = rule(con, name, os.path.join(work, name + ".parquet"), args.repeat,
                                            args.explain)
                total[0] += rc + wc
                total[1] += rw + ww
                print(f"{stage + ' ' + name:28} {rows:10,} {rc:7.3f} {rw:7.3f}   write {wc:.3f} CPU, {ww:.3f} wall")
        print(f"{'rules + writes, in all':28} {'':10} {total[0]:7.3f} {total[1]:7.3f}")
        con.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
