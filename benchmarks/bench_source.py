"""A job whose ranks made their own parts of the run (tracekit.profiler.trace_handler(DIR, run=RUN)): how soon
the first answer comes once the last part is written, and at what memory.

    python benchmarks/bench_source.py --ranks 4096 [--work DIR] [--compare] [--keep] [--reuse-parts]

A synthetic job of N ranks, 8 per host (benchmarks/synth_traces.py, 2 steps, each host's clock offset),
each rank's part made as the handler's process makes it (python -m tracekit.ingestion.rank_part; here in a
pool of every core, where a job makes them on N hosts at once: not in the figure). The writer whose part
completes a group of 256 ranks then joins the group's tables (tracekit/ingestion/part_groups.py): the
longest such join is in the figure (the last part's writer does it before the reduce can begin; with
--reuse-parts the last group is joined again, timed). Then, as a user would: `tracekit ingest --reduce RUN`
and `tracekit report RUN summary`, each a process of its own under peak.py; the last line gives the join's
and their wall seconds together ("first answer S s") and the larger
peak RSS of the two process trees ("M MB"), and their CPU seconds (user + system: on a shared machine the
wall seconds say the load as much as the work). --compare also ingests the traces centrally
(`tracekit ingest DIR`) and compares every report's JSON rows, as multisets (exposed orders rows that tie
either way, and critical_path names one of tied ranks at random: separate bugs, seen on central ingests).
The machines are shared and noisy: read the figures as such.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from multiprocessing import Pool

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
from synth_traces import main as synth_main  # noqa: E402

from tracekit.words import plural  # noqa: E402


def plan_for(n: int) -> str:
    """A 3-D plan of n ranks (n a power of 2, at least 8): tp8 within a host once n allows it."""
    tp = 8 if n >= 64 else 2
    pp = 4 if n >= 128 else 2
    return f"tp{tp}-pp{pp}-dp{n // (tp * pp)}"


def _part(args) -> tuple[float, str | None, float]:
    """(seconds, None, G) for a part made, (seconds, why not, 0) for one the writer refused; G: the seconds
    its writer then spent joining its group of ranks (part_groups.py; 0 where the part completed none)."""
    from tracekit.errors import TracekitError
    from tracekit.ingestion.rank_part import _join_group, make_part, read_part

    start = time.perf_counter()
    try:
        part = make_part(*args, group=False)
    except TracekitError as exc:
        return time.perf_counter() - start, str(exc), 0.0
    made = time.perf_counter()
    doc = read_part(part)
    _join_group(args[1], part, doc["rank"], doc["trace"].get("world_size"), doc["facts_key"])
    return made - start, None, time.perf_counter() - made


def _join_last_group(run: pathlib.Path, n: int) -> float:
    """--reuse-parts: the group of the last ranks joined again (its writer's work after the last part of a
    job is written, before the reduce can begin), timed."""
    from tracekit.ingestion.part_groups import group_dir, group_span
    from tracekit.ingestion.rank_part import _join_group
    from tracekit.rules import part_key

    lo, hi = group_span(n - 1, n)
    cycle = run / "parts" / "iteration_2"
    shutil.rmtree(group_dir(str(cycle), lo, hi), ignore_errors=True)
    start = time.perf_counter()
    _join_group(str(run), str(cycle / f"rank-{n - 1}"), n - 1, n, part_key())
    return time.perf_counter() - start


def measured(*args: str) -> tuple[float, float, int, str]:
    """(wall s, peak RSS MB of the process tree, exit status, stdout) of `tracekit ARGS` under peak.py; its
    CPU seconds (user + system, the tree's) in CPU[-1]."""
    with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        p = subprocess.run([sys.executable, str(HERE / "peak.py"), tmp.name, "-m", "tracekit.cli.main", *args],
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        CPU.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        info = json.loads(pathlib.Path(tmp.name).read_text() or "{}")
    if p.returncode:
        print(f"  ! tracekit {' '.join(args[:2])}: {p.stderr.strip()[-400:]}", file=sys.stderr)
    return seconds, info.get("tree_peak_rss_mb", float("nan")), p.returncode, p.stdout


CPU: list[float] = []


def rows_of(name: str, code: int, text: str):
    """A report's rows as a multiset (rows tied on its order come in either order), critical_path's without
    their rank (it names one of tied ranks at random)."""
    if code != 0:
        return text
    rows = json.loads(text)
    if name == "critical_path":
        rows = [{k: v for k, v in r.items() if k != "rank"} for r in rows]
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


def _timings(run: pathlib.Path) -> str:
    """" (cross-rank facts A s, ...)": the reduce's steps, from the run's manifest."""
    from tracekit.layout.manifest import read_manifest
    from tracekit.layout.versions import current_version

    try:
        t = read_manifest(current_version(str(run)))["executor"]["timings"]
    except (TypeError, KeyError, OSError):
        return ""
    names = {"cross_rank_s": "cross-rank facts", "align_s": "clock alignment", "compact_s": "compaction",
             "finish_s": "finish"}
    return " (" + ", ".join(f"{names[k]} {v:.1f} s" for k, v in t.items() if k in names) + ")"


def every_report(run: pathlib.Path) -> dict:
    from tracekit.reports import REGISTRY

    out = {}
    for name in REGISTRY:
        p = subprocess.run([sys.executable, "-m", "tracekit.cli.main", "report", str(run), name, "--format", "json"],
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        out[name] = (p.returncode, rows_of(name, p.returncode, p.stdout))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, required=True, help="world size (a power of 2, at least 8)")
    ap.add_argument("--work", default=None, help="where the traces and runs go [default: a temporary directory]")
    ap.add_argument("--compare", action="store_true", help="also ingest centrally and compare every report")
    ap.add_argument("--keep", action="store_true", help="keep --work's traces and runs")
    ap.add_argument("--reuse-parts", action="store_true",
                    help="where --work holds every rank's part (an earlier --keep), reduce those again")
    args = ap.parse_args(argv)
    n = args.ranks
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="tk-source-"))
    traces, run = work / "traces" / "iteration_2", work / "run"
    try:
        if not traces.is_dir():
            synth_main(["--ranks", str(n), "--plan", plan_for(n), "--steps", "2", "--gpus-per-host", "8",
                        "--clock-offset-us", "200", "-o", str(traces)])
        files = sorted(traces.glob("*.json.gz"))
        failed = []
        if args.reuse_parts and len(list((run / "parts" / "iteration_2").glob("rank-*"))) == len(files):
            # the parts of an earlier --work --keep (setup, not what is timed: 4,096 parts take half an hour
            # on 2 cores); the reduce below builds the run from them again, as a first reduce does
            for entry in run.iterdir():  # what the parts' writers did not make: as before a first reduce
                if entry.name not in ("parts", "tracekit-run.json", "writer.lock"):
                    shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
            join_s = _join_last_group(run, n)
            print(f"{n} ranks ({plan_for(n)}, {plural(n // 8, 'host', 'hosts')}): the parts of {run} reused; "
                  f"the last group of ranks joined again in {join_s:.1f} s")
        else:
            shutil.rmtree(run, ignore_errors=True)
            cores = os.cpu_count() or 1
            start = time.perf_counter()
            with Pool(cores) as pool:  # each rank's part, as its handler makes it on its own host
                made = pool.map(_part, [(str(f), str(run)) for f in files], chunksize=8)
            parts_s = time.perf_counter() - start
            each = [t for t, _, _ in made]
            failed = [why for _, why, _ in made if why]
            join_s = max(g for *_, g in made)  # the last part's writer joins a group after it: the longest
            if failed:
                print(f"  ! {len(failed)} parts not made: {failed[0]}", file=sys.stderr)
            print(f"{n} ranks ({plan_for(n)}, {plural(n // 8, 'host', 'hosts')}): parts made in {parts_s:.1f} s on "
                  f"{cores} cores "
                  f"(a part: {sum(each) / len(each) * 1000:.0f} ms mean, {max(each) * 1000:.0f} ms most; "
                  f"a group of ranks joined by its last writer: {join_s:.1f} s most)")
        load = os.getloadavg()[0]
        r_s, r_mb, r_rc, _ = measured("ingest", "--reduce", str(run))
        r_cpu = CPU[-1]
        s_s, s_mb, s_rc, out = measured("report", str(run), "summary", "--format", "csv")
        s_cpu = CPU[-1]
        rows = max(0, len(out.strip().splitlines()) - 1)
        steps = _timings(run)
        print(f"  last group joined {join_s:.1f} s; reduce {r_s:.1f} s ({r_cpu:.1f} s of CPU), {r_mb:.0f} MB{steps}; "
              f"report summary {s_s:.1f} s ({s_cpu:.1f} s of CPU), {s_mb:.0f} MB ({rows} rows); "
              f"load {load:.1f} before, {os.getloadavg()[0]:.1f} after")
        if args.compare:
            c_s, c_mb, c_rc, _ = measured("ingest", str(traces), "-o", str(work / "central"), "--no-progress")
            a, b = every_report(run), every_report(work / "central")
            same = [k for k in a if a[k] == b[k]]
            print(f"  central ingest {c_s:.1f} s, {c_mb:.0f} MB; reports equal: {len(same)} of {len(a)}"
                  + ("" if len(same) == len(a) else f" (differ: {', '.join(k for k in a if k not in same)})"))
        ok = r_rc == s_rc == 0 and not failed
        print(f"first answer {join_s + r_s + s_s:.1f} s, {max(r_mb, s_mb):.0f} MB ({r_cpu + s_cpu:.1f} s of CPU)"
              + ("" if ok else " (FAILED)"))
        return 0 if ok else 1
    finally:
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
