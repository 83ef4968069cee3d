"""Ingest every shared trace set and every examples/traces run with one checkout, then compare two such
sets of runs table by table: every Parquet file of the runs' facts and tables, the events as a store
reads them, and every report's JSON.

    python benchmarks/compare_runs.py build CHECKOUT OUT [--extra NAME=PATH ...]
    python benchmarks/compare_runs.py compare OUT_A OUT_B

`build` runs CHECKOUT's tracekit (PYTHONPATH=CHECKOUT) on each set; `compare` prints one line per run
(equal, or what differs) and exits 1 when any differs.
"""

from __future__ import annotations

import glob
import json
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "traces"
EXAMPLES = HERE.parent / "examples" / "traces"
REPORTS = ["bound", "breakdown", "collectives", "critical_path", "doctor", "exposed", "identity", "overlap",
           "replay", "skew", "stragglers", "summary", "why_late"]


def sets(extra: list[str]) -> dict[str, str]:
    out = {}
    for d in sorted(SHARED.iterdir()):
        if not d.is_dir():
            continue
        subs = [s for s in sorted(d.iterdir()) if s.is_dir()]
        if subs and not any(f.is_file() and "json" in f.name for f in d.iterdir()):
            for s in subs:
                out[f"{d.name}.{s.name}"] = str(s)
        else:
            out[d.name] = str(d)
    for d in sorted(EXAMPLES.iterdir()) if EXAMPLES.is_dir() else []:
        if d.is_dir() and d.name.startswith("sweep-"):  # a run per folder
            out.update({f"examples.{d.name}.{s.name}": str(s) for s in sorted(d.iterdir()) if s.is_dir()})
        elif d.is_dir():
            out[f"examples.{d.name}"] = str(d)
    for e in extra:
        name, path = e.split("=", 1)
        out[name] = path
    return out


def build(checkout: str, out: str, extra: list[str]) -> int:
    env = {**os.environ, "PYTHONPATH": checkout}
    os.makedirs(out, exist_ok=True)
    bad = 0
    for name, src in sets(extra).items():
        run = os.path.join(out, name)
        if os.path.exists(run + ".reports.json"):  # (built before)
            continue
        p = subprocess.run([sys.executable, "-m", "tracekit.cli.main", "ingest", src, "-o", run, "--force",
                            "--no-progress"], env=env, capture_output=True, text=True, cwd=checkout)
        if p.returncode:
            print(f"{name}: ingest failed: {p.stderr.strip().splitlines()[-1:]}")
            bad += 1
            continue
        reports = {}
        for r in REPORTS:
            q = subprocess.run([sys.executable, "-m", "tracekit.cli.main", "report", run, r, "--format", "json"],
                               env=env, capture_output=True, text=True, cwd=checkout)
            reports[r] = q.stdout if q.returncode == 0 else f"rc={q.returncode} {q.stderr.strip()}"
        pathlib.Path(run + ".reports.json").write_text(json.dumps(reports))
        dump_events(checkout, run)
        print(f"{name}: built", flush=True)
    return 1 if bad else 0


def dump_events(checkout: str, run: str) -> None:
    env = {**os.environ, "PYTHONPATH": checkout}
    q = subprocess.run([sys.executable, "-c", EVENTS_DUMP, run], env=env, capture_output=True, text=True, cwd=checkout)
    pathlib.Path(run + ".events.txt").write_text(q.stdout if q.returncode == 0 else "ERR " + q.stderr)


# the events as the store reads them (every column, in order): a digest of their rows and their schema
EVENTS_DUMP = """
import hashlib, sys
from tracekit.store import Run
s = Run(sys.argv[1])
cur = s.execute("SELECT * FROM events ORDER BY rank, event_index")
print([(d[0], str(d[1])) for d in cur.description])
h = hashlib.sha256(); n = 0
while rows := cur.fetchmany(100000):
    for r in rows:
        h.update(repr(r).encode()); n += 1
print(n, h.hexdigest())
"""


def _live(run: str) -> str:
    from tracekit.layout.versions import current_version

    return current_version(os.path.realpath(run)) or run


def _tables(run: str) -> dict[str, list[str]]:
    live = _live(run)
    out: dict[str, list[str]] = {}
    for f in glob.glob(os.path.join(live, "**", "*.parquet"), recursive=True):
        rel = os.path.relpath(f, live)
        if rel.startswith("events"):
            continue
        key = rel.split(os.sep)[1] if rel.startswith("facts" + os.sep) else rel
        out.setdefault(key, []).append(f)
    return out


def _rows(files: list[str]):
    import duckdb
    con = duckdb.connect()
    lst = ", ".join("'" + f + "'" for f in files)
    cols = con.execute(f"DESCRIBE SELECT * FROM read_parquet([{lst}], union_by_name=true)").fetchall()
    rows = con.execute(f"SELECT * FROM read_parquet([{lst}], union_by_name=true)").fetchall()
    return [(c, t) for c, t, *_ in cols], sorted(rows, key=repr)


def compare(a: str, b: str) -> int:
    bad = 0
    names = sorted(n for n in os.listdir(a) if os.path.isdir(os.path.join(a, n)))
    for name in names:
        ra, rb = os.path.join(a, name), os.path.join(b, name)
        if not os.path.isdir(rb):
            print(f"{name}: missing in {b}")
            bad += 1
            continue
        ta, tb = _tables(ra), _tables(rb)
        diffs = []
        if set(ta) != set(tb):
            diffs.append(f"tables differ: {sorted(set(ta) ^ set(tb))}")
        for t in sorted(set(ta) & set(tb)):
            x, y = _rows(ta[t]), _rows(tb[t])
            if t == "traces.parquet":  # its paths and file stats are of the input: equal; sha too
                pass
            if x != y:
                diffs.append(t)
        for suffix in (".reports.json", ".events.txt"):
            if pathlib.Path(ra + suffix).read_text() != pathlib.Path(rb + suffix).read_text():
                diffs.append(suffix[1:])
        print(f"{name}: {len(ta)} tables: " + ("equal" if not diffs else "DIFFER: " + ", ".join(diffs)), flush=True)
        bad += bool(diffs)
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "dump":  # dump CHECKOUT OUT: the events digests again
        for n in sorted(os.listdir(sys.argv[3])):
            if os.path.isdir(os.path.join(sys.argv[3], n)):
                dump_events(sys.argv[2], os.path.join(sys.argv[3], n))
        sys.exit(0)
    if sys.argv[1] == "build":
        extra = [x for x in sys.argv[4:] if x != "--extra"]
        sys.exit(build(sys.argv[2], sys.argv[3], extra))
    sys.exit(compare(sys.argv[2], sys.argv[3]))
