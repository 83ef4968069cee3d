"""Ingest benchmark: tracekit against HTA 0.5.0, side by side, whole processes, in one run.

    python benchmarks/bench_ingest.py [--work DIR] [--sizes 270,1000] [--hta-max-mb 300] [--jobs N]
    python benchmarks/bench_ingest.py --sizes 270 --side-by-side 5    (tracekit and HTA in turn: wall, CPU)

1. Ingest: `tracekit ingest` (per-rank facts included) with the compiled fast path, the same with
   TRACEKIT_PURE_PYTHON=1 (every event through Python: what the compiled core gains), and HTA's
   TraceAnalysis load. Cases: hta_df_index_resolver (54 MB JSON), tracelens_xdit_sd35_perf (62 MB,
   compact JSON), and traces built by repeating df_index_resolver's events to ~270 MB and ~1 GB
   (benchmarks/build_traces.py).
2. End to end: `tracekit ingest` + `tracekit report RUN overlap` (two processes, times added) against
   HTA's load + get_comm_comp_overlap (one process), on the 54 MB, 270 MB and 8-rank DLRM sets.

tracekit runs with --jobs N (default: every core; one file uses them as threads). Wall time and peak
memory are of whole processes, imports included: the time is the median of --repeat runs (default 3),
memory the peak of the summed RSS of the process and its workers (peak.py). Prints MB/s (JSON MB,
decimal), events/s, peak RSS and the ratios HTA/tracekit.
The machines are shared and noisy: read the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow.parquet as pq

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from build_traces import build
from install import describe as describe_install

HERE = pathlib.Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "traces"
HTA_LOAD = "from hta.trace_analysis import TraceAnalysis; TraceAnalysis(trace_dir={d!r})"
HTA_OVERLAP = ("from hta.trace_analysis import TraceAnalysis; "
               "TraceAnalysis(trace_dir={d!r}).get_comm_comp_overlap(visualize=False)")


REPEAT = 3  # each measurement is the median of this many runs (--repeat)


def measure(cmd: list[str], env: dict | None = None) -> tuple[float, float, int]:
    """(seconds, peak RSS MB, exit status): the median wall time of REPEAT runs of one child process (the
    machines are shared: single runs vary by 5-10 %), the largest peak RSS of the process and its workers;
    ``cmd`` is the Python arguments (``-m module ...`` or ``-c code``), run under peak.py."""
    runs = [_measure_once(cmd, env) for _ in range(REPEAT)]
    seconds = sorted(r[0] for r in runs)[len(runs) // 2]
    return seconds, max(r[1] for r in runs), max(r[2] for r in runs)


def _measure_once(cmd: list[str], env: dict | None = None) -> tuple[float, float, int]:
    return _measure_cpu(cmd, env)[:3]


def _measure_cpu(cmd: list[str], env: dict | None = None) -> tuple[float, float, int, float]:
    """(wall s, peak RSS MB, exit status, CPU s: user + system of the process and its workers) of one run."""
    with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, str(HERE / "peak.py"), tmp.name, *cmd],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, **(env or {})})
        elapsed = time.perf_counter() - start
        now = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = now.ru_utime - used.ru_utime + now.ru_stime - used.ru_stime
        try:
            info = json.loads(pathlib.Path(tmp.name).read_text())
        except ValueError:
            info = {"tree_peak_rss_mb": float("nan"), "status": proc.returncode}
    if proc.returncode != 0:
        print(f"  ! {' '.join(cmd[:2])} failed: {proc.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
    return elapsed, info["tree_peak_rss_mb"], proc.returncode, cpu


def side_by_side(trace: pathlib.Path, work: pathlib.Path, rounds: int, jobs: int) -> dict:
    """tracekit ingest and HTA's load of one trace, in turn, ``rounds`` times (a burst of load on the shared
    machine falls on both alike): each run's wall and CPU seconds (user + system, workers included), the
    medians, the least CPU, and HTA's over tracekit's of each."""
    d = work / "side"
    d.mkdir(parents=True, exist_ok=True)
    target = d / trace.name
    if not target.exists():
        os.symlink(trace, target)
    out = work / "run-side"
    tk_cmd = ["-m", "tracekit.cli.main", "ingest", str(target), "-o", str(out), "--force", "--jobs", str(jobs),
              "--no-progress", "--rank", f"{target}=0"]
    runs: dict = {"tracekit": [], "hta": []}
    print(f"\nside by side, {trace.name}: {rounds} rounds (tracekit --jobs {jobs}, then HTA), load at start "
          f"{os.getloadavg()[0]:.1f}\n{'round':>5} {'tool':>8} {'wall s':>7} {'CPU s':>6} {'RSS MB':>6} {'load':>5}")
    for r in range(rounds):
        for tool, cmd in (("tracekit", tk_cmd), ("hta", ["-c", HTA_LOAD.format(d=str(d))])):
            wall, rss, status, cpu = _measure_cpu(cmd)
            runs[tool].append({"wall_s": wall, "cpu_s": cpu, "rss_mb": rss, "ok": status == 0})
            print(f"{r:5} {tool:>8} {wall:7.2f} {cpu:6.2f} {rss:6.0f} {os.getloadavg()[0]:5.1f}", flush=True)
    shutil.rmtree(out, ignore_errors=True)
    med = {t: {k: statistics.median(x[k] for x in v) for k in ("wall_s", "cpu_s", "rss_mb")} for t, v in runs.items()}
    least = {t: min(x["cpu_s"] for x in v) for t, v in runs.items()}
    res = {"runs": runs, "median": med, "least_cpu": least,
           "hta_over_tk_median_wall": med["hta"]["wall_s"] / med["tracekit"]["wall_s"],
           "hta_over_tk_median_cpu": med["hta"]["cpu_s"] / med["tracekit"]["cpu_s"],
           "hta_over_tk_least_cpu": least["hta"] / least["tracekit"]}
    print(f"median wall: tracekit {med['tracekit']['wall_s']:.2f} s, HTA {med['hta']['wall_s']:.2f} s: "
          f"{res['hta_over_tk_median_wall']:.1f}x; median CPU: {med['tracekit']['cpu_s']:.2f} s vs "
          f"{med['hta']['cpu_s']:.2f} s: {res['hta_over_tk_median_cpu']:.1f}x; least CPU: {least['tracekit']:.2f} s "
          f"vs {least['hta']:.2f} s: {res['hta_over_tk_least_cpu']:.1f}x; peak RSS {med['tracekit']['rss_mb']:.0f} MB "
          f"vs {med['hta']['rss_mb']:.0f} MB; load at end {os.getloadavg()[0]:.1f}")
    return res


def tk_ingest(target: pathlib.Path, out: pathlib.Path, jobs: int, pure: bool = False, ranks: list[str] = ()):
    args = ["-m", "tracekit.cli.main", "ingest", str(target), "-o", str(out), "--force", "--jobs", str(jobs),
            "--no-progress"]
    for r in ranks:
        args += ["--rank", r]
    return measure(args, {"TRACEKIT_PURE_PYTHON": "1"} if pure else None)


def json_size(run: pathlib.Path) -> tuple[float, int]:
    """JSON MB and events as the ingest itself counted them (tests check those counts against json.load)."""
    from tracekit.layout.versions import current_version

    live = pathlib.Path(current_version(str(run)) or run)  # the run's live version (RUN/CURRENT names it)
    t = pq.read_table(live / "traces.parquet", columns=["json_bytes", "event_count"])
    return sum(t.column("json_bytes").to_pylist()) / 1e6, sum(t.column("event_count").to_pylist())


def run_case(name: str, trace: pathlib.Path, work: pathlib.Path, with_hta: bool, jobs: int):
    d = work / name
    d.mkdir(parents=True, exist_ok=True)
    target = d / trace.name
    if not target.exists():
        os.symlink(trace, target)
    out = work / f"run-{name}"
    tk = tk_ingest(target, out, jobs, ranks=[f"{target}=0"])
    json_mb, events = json_size(out)
    pure = tk_ingest(target, out, jobs, pure=True, ranks=[f"{target}=0"])
    shutil.rmtree(out, ignore_errors=True)
    row = {"case": name, "json_mb": json_mb, "events": events, "tk_s": tk[0], "tk_rss_mb": tk[1],
           "pure_s": pure[0], "pure_rss_mb": pure[1]}
    if with_hta:
        hta = measure(["-c", HTA_LOAD.format(d=str(d))])
        row.update(hta_s=hta[0], hta_rss_mb=hta[1], ok=hta[2] == 0)
    return row


def end_to_end(name: str, trace_dir: pathlib.Path, work: pathlib.Path, jobs: int):
    """tracekit ingest + report overlap (two processes) against HTA load + get_comm_comp_overlap."""
    out = work / f"e2e-{name}"
    ing = tk_ingest(trace_dir, out, jobs)
    json_mb, events = json_size(out)
    rep = measure(["-m", "tracekit.cli.main", "report", str(out), "overlap", "--format", "csv"])
    shutil.rmtree(out, ignore_errors=True)
    hta = measure(["-c", HTA_OVERLAP.format(d=str(trace_dir))])
    return {"case": name, "json_mb": json_mb, "events": events, "tk_ingest_s": ing[0], "tk_report_s": rep[0],
            "tk_s": ing[0] + rep[0], "tk_rss_mb": max(ing[1], rep[1]), "hta_s": hta[0], "hta_rss_mb": hta[1],
            "ok": ing[2] == rep[2] == hta[2] == 0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default=None, help="scratch directory (default: a temp dir, removed after)")
    ap.add_argument("--sizes", default="270,1000", help="MB of the built traces")
    ap.add_argument("--hta-max-mb", type=float, default=300, help="skip HTA above this JSON size")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="tracekit --jobs (default: every core)")
    ap.add_argument("--skip", default="", help="comma-separated parts to leave out: ingest, e2e")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; the median is reported")
    ap.add_argument("--side-by-side", type=int, default=0, metavar="ROUNDS",
                    help="only tracekit and HTA on the first --sizes trace, in turn, this many rounds: wall and CPU")
    args = ap.parse_args(argv)
    global REPEAT
    REPEAT = max(1, args.repeat)
    if not SHARED.is_dir():
        print(f"needs the real traces at {SHARED}", file=sys.stderr)
        return 2
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="tk-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    skip = set(args.skip.split(","))
    src = SHARED / "hta_df_index_resolver" / "df_index_resolver.json.gz"
    built = {}
    for mb in (float(x) for x in args.sizes.split(",") if x):
        path = work / "built" / f"rank0_{int(mb)}MB.json"
        path.parent.mkdir(exist_ok=True)
        if not path.exists():
            build(str(src), str(path), mb)
        built[int(mb)] = path
    print(describe_install())
    # Both sides start from bytecode, as a pip install leaves them (HTA's is installed with its .pyc files):
    # with PYTHONDONTWRITEBYTECODE set, a checkout would otherwise compile ~40 modules in every process.
    import tracekit
    compileall.compile_dir(os.path.dirname(tracekit.__file__), quiet=1)
    if args.side_by_side:
        first = next(iter(built.values()))
        res = side_by_side(first, work, args.side_by_side, args.jobs)
        (work / "side_by_side.json").write_text(json.dumps(res, indent=1))
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
        return 0
    print(f"tracekit --jobs {args.jobs} on {os.cpu_count()} cores; each time the median of {REPEAT} runs")
    results = {"jobs": args.jobs, "cores": os.cpu_count(), "repeat": REPEAT, "ingest": [], "end_to_end": []}
    if "ingest" not in skip:
        cases = [("df_index_resolver_54MB", src),
                 ("xdit_sd35_compact_62MB", SHARED / "tracelens_xdit_sd35_perf" / "profile_trace_rank_0.json.gz")]
        cases += [(f"repeated_{mb}MB", path) for mb, path in built.items()]
        print(f"\n1. ingest\n{'case':24} {'MB':>6} {'events':>10} | {'tracekit s':>10} {'MB/s':>5} {'ev/s':>10} "
              f"{'RSS MB':>6} | {'pure-Py s':>9} {'MB/s':>5} | {'HTA s':>6} {'RSS MB':>6} | {'HTA/tk':>6} "
              f"{'pure/tk':>7} {'RSS x':>5}")
        for name, path in cases:
            size_mb = path.stat().st_size / 1e6 if not path.name.endswith(".gz") else 0
            row = run_case(name, path, work, size_mb <= args.hta_max_mb, args.jobs)
            results["ingest"].append(row)
            line = (f"{name:24} {row['json_mb']:6.0f} {row['events']:10,} | {row['tk_s']:10.2f} "
                    f"{row['json_mb'] / row['tk_s']:5.0f} {row['events'] / row['tk_s']:10,.0f} "
                    f"{row['tk_rss_mb']:6.0f} | "
                    f"{row['pure_s']:9.2f} {row['json_mb'] / row['pure_s']:5.0f} |")
            if "hta_s" in row:
                line += (f" {row['hta_s']:6.2f} {row['hta_rss_mb']:6.0f} | {row['hta_s'] / row['tk_s']:6.1f} "
                         f"{row['pure_s'] / row['tk_s']:7.1f} {row['hta_rss_mb'] / row['tk_rss_mb']:5.1f}")
            else:
                line += f" {'-':>6} {'-':>6} | {'-':>6} {row['pure_s'] / row['tk_s']:7.1f} {'-':>5}"
            print(line, flush=True)
    if "e2e" not in skip:
        sets = [("df_index_resolver_54MB", work / "e2e-in" / "df54", [src])]
        if 270 in built:
            sets.append(("repeated_270MB", work / "e2e-in" / "rep270", [built[270]]))
        sets.append(("dlrm_8rank", work / "e2e-in" / "dlrm",
                     sorted((SHARED / "param_dlrm_kineto_8rank").glob("*.json"))))
        print(f"\n2. end to end: tracekit ingest + report overlap vs HTA load + get_comm_comp_overlap\n"
              f"{'set':24} {'MB':>6} | {'ingest s':>8} {'report s':>8} {'total':>6} {'MB/s':>5} {'RSS MB':>6} | "
              f"{'HTA s':>6} {'MB/s':>5} {'RSS MB':>6} | {'HTA/tk':>6} {'RSS x':>5}")
        for name, d, files in sets:
            d.mkdir(parents=True, exist_ok=True)
            for f in files:
                if not (d / f.name).exists():
                    os.symlink(f, d / f.name)
            row = end_to_end(name, d, work, args.jobs)
            results["end_to_end"].append(row)
            print(f"{name:24} {row['json_mb']:6.0f} | {row['tk_ingest_s']:8.2f} {row['tk_report_s']:8.2f} "
                  f"{row['tk_s']:6.2f} {row['json_mb'] / row['tk_s']:5.0f} {row['tk_rss_mb']:6.0f} | "
                  f"{row['hta_s']:6.2f} {row['json_mb'] / row['hta_s']:5.0f} {row['hta_rss_mb']:6.0f} | "
                  f"{row['hta_s'] / row['tk_s']:6.1f} {row['hta_rss_mb'] / row['tk_rss_mb']:5.1f}", flush=True)
    (work / "results.json").write_text(json.dumps(results, indent=1))
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
