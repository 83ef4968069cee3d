"""Scale benchmark: report latency and ingest time against the number of ranks, whole processes.

    python benchmarks/bench_scale.py [--ranks 8,64,256,1024] [--before 8874438] [--work DIR] [--plot docs/img/scale.png]
    python benchmarks/bench_scale.py --ranks 8,512,1024,4096 --gpus-per-host 8 [--work DIR]

With --gpus-per-host, the job is heavy and spans hosts: the real 8-rank DLRM job (../shared/traces, about
3.4k events a rank) replicated to N ranks, N / gpus-per-host hosts, each host's clock (but the first's)
offset by a known whole number of microseconds (heavy_job). Each stage then runs once as its own process:
ingest on Dask (LocalCluster of every core, on 127.0.0.1; the clock alignment is part of its reduce),
every report, the HTML report, and the timeline of one step for 8 and for 64 ranks; wall time and peak RSS
of each, ratios to the first size (the 64-rank timeline: to the first size with 64 ranks, the same
selection), and the recovered clock offsets against the planted ones.

For each size a synthetic job (benchmarks/synth_traces.py, 2 steps) is ingested with --jobs 2, then
every report runs in its own process next to `tracekit sql RUN "select 1"` (the cost of starting
tracekit at all), measured in the same loop. Prints seconds, peak RSS, ratios to `select 1` and to
the 8-rank run, ingest seconds per rank, and --scheduler local with 2 workers against 1. With --before
COMMIT, the same reports also run on tracekit as of that commit (a git worktree, its own ingest), for
the before/after curve. The machines are shared and noisy: read the ratios.
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bench_ingest import measure
from install import describe as describe_install

REPORTS = [["summary"], ["collectives"], ["overlap", "--by", "step"], ["exposed", "--by", "group"], ["skew"],
           ["stragglers"]]
PLANS = {8: "tp2-pp2-dp2", 16: "tp2-pp2-dp4", 64: "tp8-pp2-dp4", 128: "tp8-pp4-dp4", 256: "tp8-pp4-dp8",
         512: "tp8-pp4-dp16", 1024: "tp8-pp4-dp32"}


def tk(pythonpath: str | None, *args: str) -> tuple[float, float, int]:
    env_cmd = ["-m", "tracekit.cli.main", *args]
    if pythonpath is None:
        return measure(env_cmd)
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = pythonpath
    try:
        return measure(env_cmd)
    finally:
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old


def reports(run: pathlib.Path, pythonpath: str | None, repeat: int) -> dict:
    """Best of ``repeat`` for select 1 and each report, measured in one loop."""
    best: dict[str, tuple[float, float]] = {}
    for _ in range(repeat):
        for name, args in [("select 1", ["sql", str(run), "select 1", "--format", "csv"])] + \
                          [(" ".join(r), ["report", str(run), *r, "--format", "csv"]) for r in REPORTS]:
            s, rss, status = tk(pythonpath, *args)
            if status == 0 and (name not in best or s < best[name][0]):
                best[name] = (s, rss)
    return best


SHARED = pathlib.Path(os.environ.get("TRACEKIT_SHARED_TRACES", ROOT.parent / "shared" / "traces"))
DLRM = SHARED / "param_dlrm_kineto_8rank"
_TS = re.compile(rb'"ts": (\d+)')


def planted_offset_us(host: int, spread: int = 200) -> int:
    """The clock offset heavy_job writes on a host: host 0 keeps the true clock; the others within +-spread."""
    return 0 if host == 0 else (host * 7919) % (2 * spread + 1) - spread


def _write_rank(args):
    src, out, rank, world, host = args
    off = planted_offset_us(host)
    text = pathlib.Path(src).read_bytes()
    if off:
        text = _TS.sub(lambda m: b'"ts": ' + str(int(m.group(1)) + off).encode(), text)
    text = re.sub(rb'("distributedInfo": \{[^}]*?"rank": )\d+', rb"\g<1>" + str(rank).encode(), text, count=1)
    text = re.sub(rb'("distributedInfo": \{[^}]*?"world_size": )\d+', rb"\g<1>" + str(world).encode(), text, count=1)
    text = text.replace(b"{", b'{"tracekit_host": "host' + str(host).encode() + b'", ', 1)
    with gzip.open(out, "wb", compresslevel=1) as f:
        f.write(text)


def heavy_job(n: int, gpus_per_host: int, out: pathlib.Path) -> None:
    """The DLRM job's 8 ranks replicated to n: rank r is DLRM rank r % 8, on host r // gpus_per_host,
    whose clock reads planted_offset_us(host) later than true time (every ts shifted)."""
    srcs = {json.loads(f.read_bytes())["distributedInfo"]["rank"]: f for f in DLRM.glob("*.json")}
    if sorted(srcs) != list(range(8)):
        raise SystemExit(f"{DLRM}: expected the 8 DLRM ranks (set TRACEKIT_SHARED_TRACES)")
    out.mkdir(parents=True, exist_ok=True)
    tasks = [(str(srcs[r % 8]), str(out / f"rank{r}_trace.json.gz"), r, n, r // gpus_per_host) for r in range(n)]
    with multiprocessing.Pool(2) as pool:
        pool.map(_write_rank, tasks, chunksize=16)


def heavy(sizes: list[int], gpus_per_host: int, work: pathlib.Path) -> dict:
    import bench_ingest

    from tracekit.reports import REGISTRY

    bench_ingest.REPEAT = 1  # each stage once: a 4,096-rank ingest is minutes on a shared machine

    cores = os.cpu_count() or 1
    out: dict = {}
    for n in sizes:
        traces = work / f"heavy{n}"
        if not traces.exists():
            heavy_job(n, gpus_per_host, traces)
        run = work / f"heavy-run{n}"
        stages: dict = {}
        stages["ingest (dask)"] = tk(None, "ingest", str(traces), "-o", str(run), "--force", "--scheduler", "local",
                                     "--jobs", str(cores), "--no-progress")[:2]
        from tracekit.layout.versions import current_version

        live = pathlib.Path(current_version(str(run)) or run)  # the run's live version (RUN/CURRENT names it)
        manifest = json.loads((live / "manifest.json").read_text())
        for k, v in (manifest.get("executor", {}).get("timings") or {}).items():
            stages[f"  {k}"] = (v, float("nan"))
        for name in REGISTRY:
            stages[name] = tk(None, "report", str(run), name, "--format", "csv")[:2]
        stages["html"] = tk(None, "html", str(run), "-o", str(work / f"heavy{n}.html"))[:2]
        # the timeline of a fixed selection (one step of 8, and of 64 ranks): compared with a run that has
        # the same selection (64 ranks: the first size with 64), it writes the same events whatever the job
        for k in (8, 64):
            if n >= k:
                stages[f"timeline, {k} ranks"] = tk(None, "timeline", str(run), "-o",
                                                    str(work / f"heavy{n}-{k}.json.gz"), "--steps", "10",
                                                    "--ranks", f"0:{k - 1}")[:2]
        out[n] = stages
        err = _offset_error(run, gpus_per_host)
        print(f"{n:5d} ranks, {n // gpus_per_host} hosts (recovered offsets: worst error {err})", flush=True)
        for name, (sec, rss) in stages.items():
            first = next(m for m in sizes if name in out.get(m, {}))  # the smallest run with this stage
            print(f"      {name:22s} {sec:7.2f} s  {rss:7.0f} MB  x{sec / out[first][name][0]:.2f} of "
                  f"{first} ranks", flush=True)
    return out


def _offset_error(run: pathlib.Path, gpus_per_host: int) -> str:
    import tracekit

    table = tracekit.open(run).sql("SELECT host, offset_ns FROM clock_offsets")
    rows = [(r["host"], r["offset_ns"]) for r in table.to_pylist()]
    errs = [abs(o + planted_offset_us(int(h[4:])) * 1000) for h, o in rows if o is not None]
    unaligned = sum(o is None for _, o in rows)
    return (f"{max(errs) / 1e3:.1f} us over {len(errs)} hosts" if errs else "none") + \
        (f", {unaligned} hosts unaligned" if unaligned else "")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="8,64,256,1024")
    ap.add_argument("--gpus-per-host", type=int, default=None,
                    help="heavy many-host mode: the DLRM job replicated, this many ranks per host")
    ap.add_argument("--before", default=None, help="a commit of tracekit to compare with (needs git)")
    ap.add_argument("--before-max-ranks", type=int, default=256, help="skip 'before' above this size (slow)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--work", default=None)
    ap.add_argument("--plot", default=None, help="write the latency curves to this PNG")
    ap.add_argument("--skip-dask", action="store_true", help="leave out the Dask 1-vs-2-workers ingest")
    a = ap.parse_args(argv)
    print(describe_install())
    work = pathlib.Path(a.work or tempfile.mkdtemp(prefix="tk-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    before_path = None
    if a.before:
        before_path = work / "before-src"
        if not before_path.exists():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(before_path), a.before],
                           check=True, capture_output=True)
    sizes = [int(x) for x in a.ranks.split(",")]
    if a.gpus_per_host:
        results = heavy(sizes, a.gpus_per_host, work)
        (work / "scale-heavy.json").write_text(json.dumps(results, indent=2, default=str))
        return 0
    results = {"after": {}, "before": {}, "ingest": {}}
    for n in sizes:
        traces = work / f"job{n}"
        if not traces.exists():
            subprocess.run([sys.executable, str(HERE / "synth_traces.py"), "--ranks", str(n), "--plan", PLANS[n],
                            "--steps", "2", "-o", str(traces)], check=True, capture_output=True)
        mb = sum(f.stat().st_size for f in traces.iterdir()) / 1e6
        run = work / f"run{n}"
        s, rss, _ = tk(None, "ingest", str(traces), "-o", str(run), "--force", "--jobs", "2", "--no-progress")
        results["ingest"][n] = {"seconds": s, "per_rank_s": s / n, "peak_rss_mb": rss, "gz_mb": mb}
        print(f"{n:5d} ranks ({mb:.0f} MB gz): ingest {s:.1f} s = {1000 * s / n:.0f} ms/rank (2 jobs), "
              f"peak RSS {rss:.0f} MB", flush=True)
        results["after"][n] = reports(run, None, a.repeat)
        base = results["after"][n]["select 1"][0]
        for name, (s, rss) in results["after"][n].items():
            r8 = results["after"].get(sizes[0], {}).get(name, (s,))[0]
            print(f"      {name:20s} {s:6.2f} s  {rss:6.0f} MB  x{s / base:.2f} of select 1  x{s / r8:.2f} of "
                  f"{sizes[0]} ranks", flush=True)
        if before_path and n <= a.before_max_ranks:
            old_run = work / f"run{n}-before"
            tk(str(before_path), "ingest", str(traces), "-o", str(old_run), "--force", "--jobs", "2", "--no-progress")
            results["before"][n] = reports(old_run, str(before_path), 1)
            for name, (s, rss) in results["before"][n].items():
                print(f"      before {name:13s} {s:6.2f} s  {rss:6.0f} MB  (after/before "
                      f"x{results['after'][n][name][0] / s:.2f})", flush=True)
    # Dask: 2 workers against 1 on the largest job
    n = sizes[-1]
    if a.skip_dask:
        n = None
    if n is not None:
        traces = work / f"job{n}"
        one, _, _ = tk(None, "ingest", str(traces), "-o", str(work / "dask1"), "--force", "--scheduler", "local",
                       "--jobs", "1", "--no-progress")
        two, _, _ = tk(None, "ingest", str(traces), "-o", str(work / "dask2"), "--force", "--scheduler", "local",
                       "--jobs", "2", "--no-progress")
        results["dask"] = {"ranks": n, "one_worker_s": one, "two_workers_s": two, "speedup": one / two}
        print(f"dask LocalCluster on {n} ranks: 1 worker {one:.1f} s, 2 workers {two:.1f} s: x{one / two:.2f}")
    (work / "scale.json").write_text(json.dumps(results, indent=2, default=str))
    if a.plot:
        plot(results, a.plot)
    if before_path:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before_path)],
                       capture_output=True)
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def plot(results: dict, out: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for which, style in (("after", "-o"), ("before", "--x")):
        data = results[which]
        if not data:
            continue
        xs = sorted(data)
        for name in ("summary", "skew"):
            ys = [data[x][name][0] for x in xs if name in data[x]]
            ax.plot(xs[:len(ys)], ys, style, label=f"{name} ({which})")
        ax.plot(xs, [data[x]["select 1"][0] for x in xs], style, color="grey", alpha=0.5,
                label=f"select 1 ({which})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("ranks")
    ax.set_ylabel("seconds, whole process")
    ax.set_title("tracekit report latency against job size (synthetic 2-step jobs)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
