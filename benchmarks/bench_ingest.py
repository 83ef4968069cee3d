"""Ingest benchmark: tracekit against HTA 0.5.0's TraceAnalysis load, side by side, whole processes.

    python benchmarks/bench_ingest.py [--work DIR] [--sizes 270,1000] [--hta-max-mb 300]

Cases: hta_df_index_resolver (54 MB JSON), tracelens_xdit_sd35_perf (62 MB, compact JSON), and traces
built by repeating df_index_resolver's events to ~270 MB and ~1 GB (benchmarks/build_traces.py).
Each tool runs in its own process on the same file (tracekit with --jobs 1: one file is one core);
wall time and peak RSS (the child's own VmHWM, see peak.py) are of that whole process, imports included.
Prints MB/s (JSON MB, decimal), events/s, peak RSS and the ratios HTA/tracekit. The machines are
shared and noisy: read the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import pyarrow.parquet as pq

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from build_traces import build  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "traces"
HTA_LOAD = "from hta.trace_analysis import TraceAnalysis; TraceAnalysis(trace_dir={d!r})"


def measure(cmd: list[str]) -> tuple[float, float, int]:
    """(seconds, peak RSS MB, exit status) of one child process; ``cmd`` is the Python arguments
    (``-m module ...`` or ``-c code``), run under peak.py which reads the child's own VmHWM."""
    with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, str(HERE / "peak.py"), tmp.name, *cmd],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        elapsed = time.perf_counter() - start
        try:
            info = json.loads(pathlib.Path(tmp.name).read_text())
        except ValueError:
            info = {"peak_rss_mb": float("nan"), "status": proc.returncode}
    if proc.returncode != 0:
        print(f"  ! {' '.join(cmd[:2])} failed: {proc.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
    return elapsed, info["peak_rss_mb"], proc.returncode


def run_case(name: str, trace: pathlib.Path, work: pathlib.Path, with_hta: bool):
    d = work / name
    d.mkdir(parents=True, exist_ok=True)
    target = d / trace.name
    if not target.exists():
        os.symlink(trace, target)
    out = work / f"run-{name}"
    tk = measure(["-m", "tracekit.cli.main", "ingest", str(target), "-o", str(out), "--force",
                  "--jobs", "1", "--rank", f"{target}=0", "--no-progress"])
    # JSON size and event count as the ingest itself counted them (tests check those counts against json.load)
    (info,) = pq.read_table(out / "traces.parquet", columns=["json_bytes", "event_count"]).to_pylist()
    shutil.rmtree(out, ignore_errors=True)
    row = {"case": name, "json_mb": info["json_bytes"] / 1e6, "events": info["event_count"], "tk_s": tk[0],
           "tk_rss_mb": tk[1]}
    if with_hta:
        hta = measure(["-c", HTA_LOAD.format(d=str(d))])
        row.update(hta_s=hta[0], hta_rss_mb=hta[1], ok=hta[2] == 0)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default=None, help="scratch directory (default: a temp dir, removed after)")
    ap.add_argument("--sizes", default="270,1000", help="MB of the built traces")
    ap.add_argument("--hta-max-mb", type=float, default=300, help="skip HTA above this JSON size")
    args = ap.parse_args(argv)
    if not SHARED.is_dir():
        print(f"needs the real traces at {SHARED}", file=sys.stderr)
        return 2
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="tk-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    src = SHARED / "hta_df_index_resolver" / "df_index_resolver.json.gz"
    cases = [("df_index_resolver_54MB", src),
             ("xdit_sd35_compact_62MB", SHARED / "tracelens_xdit_sd35_perf" / "profile_trace_rank_0.json.gz")]
    for mb in (float(x) for x in args.sizes.split(",") if x):
        built = work / "built" / f"rank0_{int(mb)}MB.json"
        built.parent.mkdir(exist_ok=True)
        if not built.exists():
            build(str(src), str(built), mb)
        cases.append((f"repeated_{int(mb)}MB", built))
    rows = []
    print(f"{'case':26} {'MB':>7} {'events':>10} | {'tracekit s':>10} {'MB/s':>6} {'ev/s':>10} {'RSS MB':>7} |"
          f" {'HTA s':>7} {'RSS MB':>7} | {'speed x':>7} {'RSS x':>6}")
    for name, path in cases:
        size_mb = path.stat().st_size / 1e6 if not path.name.endswith(".gz") else 0
        row = run_case(name, path, work, with_hta=size_mb <= args.hta_max_mb)
        rows.append(row)
        mbps = row["json_mb"] / row["tk_s"]
        evps = row["events"] / row["tk_s"] if row["events"] > 0 else float("nan")
        line = (f"{name:26} {row['json_mb']:7.0f} {row['events']:10,} | {row['tk_s']:10.2f} {mbps:6.0f} "
                f"{evps:10,.0f} {row['tk_rss_mb']:7.0f} |")
        if "hta_s" in row:
            line += (f" {row['hta_s']:7.2f} {row['hta_rss_mb']:7.0f} | {row['hta_s'] / row['tk_s']:7.1f}"
                     f" {row['hta_rss_mb'] / row['tk_rss_mb']:6.1f}")
        else:
            line += f" {'-':>7} {'-':>7} | {'-':>7} {'-':>6}"
        print(line, flush=True)
    (work / "results.json").write_text(json.dumps(rows, indent=1))
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
