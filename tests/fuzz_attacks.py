"""Attack classes for benchmarks/fuzz.py beside the trace mutations (issue 20): random read-only-prompt
SQL, odd run and cache path names, and processes racing on one cached run. Each case follows one rule:
the outcome is right or a one-line error (never an internal error or a traceback), the run is byte for
byte what it was, and nothing is written outside the test's directory."""

from __future__ import annotations

import json
import os
import pathlib
import random
import subprocess
import sys

from tests.conftest import live

ROOT = pathlib.Path(__file__).resolve().parents[1]

# pieces of statements, combined at random: wrappers that smuggle a statement, and statements that write,
# read outside the run, change settings or load code
WRAPPERS = ["{s}", "EXPLAIN {s}", "EXPLAIN ANALYZE {s}", "explain analyse {s}", "EXPLAIN (ANALYZE, FORMAT json) {s}",
            "/* x */ EXPLAIN ANALYZE {s}", "EXPLAIN (FORMAT json) {s}", "SELECT 1; {s}", "{s}; SELECT 1",
            "-- c\n{s}", "WITH a AS (SELECT 1) {s}"]
BODIES = [
    "COPY (FROM read_parquet('{v}/facts/_collectives/*.parquet')) TO '{v}/facts/_collectives/x.parquet' "
    "(FORMAT parquet)",
    "COPY (SELECT 1 AS x) TO '{v}/manifest.json' (FORMAT csv)",
    "COPY (SELECT 1 AS x) TO '{out}/x.csv'",
    "EXPORT DATABASE '{out}/dump'", "ATTACH '{out}/x.db' AS x", "INSTALL httpfs", "LOAD httpfs",
    "SET enable_external_access = true", "SET allowed_directories = ['/']", "RESET lock_configuration",
    "PRAGMA enable_profiling", "CALL pragma_version()", "CREATE TABLE t AS SELECT 1", "DROP VIEW events",
    "SELECT * FROM read_text('/etc/hostname')", "SELECT * FROM read_text('{v}/../../etc/hostname')",
    "SELECT * FROM read_text('.tmp/*')", "SELECT * FROM read_text('{v}/link/../etc/hostname')",
    "SELECT * FROM read_csv('{out}/secret.txt')", "SELECT count(*) FROM events",
    "SELECT * FROM glob('/*')", "SELECT * FROM read_text('~/.bashrc')",
    "SELECT current_setting('memory_limit')", "SUMMARIZE events", "DESCRIBE events",
    "SELECT count(*) FROM events a, events b, events c, range(100000000) d",
    # string functions allocate outside DuckDB's memory limit (issue 29, item 6): held by the process's cap
    "SELECT max(length(repeat('x', 300000000) || i::varchar)) FROM range(4) t(i)",
]
ODD = ["[", "]", "*", "?", " ", "'", '"', "\\", "{", "}", "é", "$", "%", "#", ",", ";", "=", "..", "~",
       "\x1b[31m", "\n"]  # a terminal's escape codes and a newline: escaped in every message (issue 29, item 7)


def _run(argv, cwd=None, env=None, timeout=120):
    e = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run([sys.executable, "-m", "tracekit.cli.main", *argv], capture_output=True, text=True,
                          cwd=cwd, env=e, timeout=timeout)


def _one_line(p) -> None:
    if p.returncode == 0:
        return
    err = p.stderr.strip()
    if p.returncode == 70 or "Traceback" in err or "internal error" in err or not err.startswith("error:"):
        raise AssertionError(f"exit {p.returncode}: {err[:400]}")
    lines = [x for x in err.splitlines() if not x.startswith("tracekit:")]
    if len(lines) != 1:
        raise AssertionError(f"not one line: {err[:400]}")


def _snapshot(d: str) -> dict:
    return {os.path.relpath(os.path.join(r, f), d): os.path.getsize(os.path.join(r, f))
            for r, _, fs in os.walk(d) for f in fs}


def make_run(work: pathlib.Path, name: str = "run") -> pathlib.Path:
    t = work / "rank0.json"
    evs = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": i, "dur": 1} for i in range(10)]
    t.write_text(json.dumps({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": evs}))
    p = _run(["ingest", str(t), "-o", str(work / name)])
    if p.returncode:
        raise AssertionError(p.stderr)
    return work / name


def sql_case(rng: random.Random, work: pathlib.Path, run: pathlib.Path) -> str:
    """A random statement through the read-only prompt: answers or refuses, changes nothing."""
    v = live(run)
    out = work / "out"
    out.mkdir(exist_ok=True)
    (out / "secret.txt").write_text("secret\n")
    q = rng.choice(WRAPPERS).format(s=rng.choice(BODIES)).format(v=v, out=out)
    before, outside = _snapshot(v), sorted(os.listdir(out))
    p = _run(["sql", str(run), q, "--format", "csv", "--timeout", "5"], cwd=work)
    _one_line(p)
    if _snapshot(v) != before or sorted(os.listdir(out)) != outside:
        raise AssertionError(f"the query wrote: {q}")
    if "secret" in p.stdout or "root:" in p.stdout:
        raise AssertionError(f"the query read outside the run: {q}")
    return "answered" if p.returncode == 0 else "refused"


def path_case(rng: random.Random, work: pathlib.Path) -> str:
    """A run, and the cache, under a directory named with characters globs, shells and SQL treat apart."""
    name = "".join(rng.choice(ODD + ["a", "b"]) for _ in range(rng.randint(1, 6))).strip()
    if name in ("", ".", "..") or "/" in name:
        name = f"d{name}x"
    d = work / name
    d.mkdir(exist_ok=True)
    t = work / "rank0.json"
    evs = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": i, "dur": 1} for i in range(3)]
    t.write_text(json.dumps({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": evs}))
    p = _run(["ingest", str(t), "-o", str(d / "run")])
    _one_line(p)
    if p.returncode == 0:
        q = _run(["sql", str(d / "run"), "SELECT count(*) AS n FROM events", "--format", "csv"])
        _one_line(q)
        if q.returncode == 0 and q.stdout != "n\n3\n":
            raise AssertionError(f"{d}: wrong answer {q.stdout!r}")
    c = _run(["sql", str(t), "SELECT count(*) AS n FROM events", "--format", "csv"],
             env={"TRACEKIT_CACHE": str(d / "c")})
    _one_line(c)
    if c.returncode == 0 and not c.stdout.endswith("n\n3\n"):
        raise AssertionError(f"{d}: wrong answer from the cache {c.stdout!r}")
    return "ok" if p.returncode == 0 and c.returncode == 0 else "refused"


def concurrency_case(rng: random.Random, work: pathlib.Path) -> str:
    """Two or three processes open the same traces through the cache at once (one may clear it): every
    reader answers right."""
    t = work / "traces"
    t.mkdir(exist_ok=True)
    for r in (0, 1):
        evs = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": i, "dur": 1}
               for i in range(rng.randint(1, 20000))]
        (t / f"rank{r}.json").write_text(json.dumps({"distributedInfo": {"rank": r, "world_size": 2},
                                                      "traceEvents": evs}))
    env = dict(os.environ, PYTHONPATH=str(ROOT), TRACEKIT_CACHE=str(work / "cache"))
    cmd = [sys.executable, "-m", "tracekit.cli.main"]
    procs = [subprocess.Popen(cmd + ["sql", str(t), "SELECT count(*) AS n FROM events", "--format", "csv"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(rng.randint(2, 3))]
    if rng.random() < 0.5:
        procs.append(subprocess.Popen(cmd + ["cache", "clear"], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    want = sum(len(json.loads((t / f"rank{r}.json").read_text())["traceEvents"]) for r in (0, 1))
    for p in procs:
        out, err = p.communicate(timeout=600)
        if p.returncode != 0 or "internal error" in err:
            raise AssertionError(f"exit {p.returncode}: {err[:400]}")
        if p.args[3] == "sql" and not out.endswith(f"n\n{want}\n"):
            raise AssertionError(f"wrong answer {out[-40:]!r}, want {want}")
    return "ok"
