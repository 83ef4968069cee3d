from __future__ import annotations

import click

from ..render import one_line


def _parse_ranks(values):
    out = {}
    for v in values:
        path, sep, n = v.rpartition("=")
        if not sep or not n.lstrip("-").isdigit():
            raise click.BadParameter(f"{v!r}: expected FILE=N, e.g. --rank trace.json=3", param_hint="--rank")
        out[path] = int(n)
    return out


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True)
@click.option("-o", "--out", default=None, type=click.Path(file_okay=False),
              help="Run directory to write, or s3://BUCKET/PREFIX (credentials and AWS_ENDPOINT_URL as the AWS tools "
                   "read them).")
@click.option("-j", "--jobs", type=int, default=None, help="Files parsed in parallel [default: all cores].")
@click.option("--on-error", type=click.Choice(["fail", "skip"]), default="fail", show_default=True,
              help="skip: record a bad file and its reason in manifest.json and go on.")
@click.option("--force", is_flag=True, help="Rebuild even when the run already holds these exact inputs.")
@click.option("--rank", "ranks", multiple=True, metavar="FILE=N",
              help="Give the rank of a file that has no distributedInfo and no rank in its name (FILE: its path or "
                   "its bare name). One file alone is rank 0.")
@click.option("--progress/--no-progress", default=None, help="Progress bar [default: when stdout is a terminal].")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run each file as a task on a Dask cluster: tcp://host:port of a running `dask scheduler` "
                   "(-o must be on storage every worker sees), or `local` for a LocalCluster of --jobs workers.")
@click.option("--iteration", type=int, default=None, metavar="N",
              help="Ingest only DIR/iteration_N (a profile directory that holds several profiling cycles).")
@click.option("--hosts", default=None, metavar="FILE|N",
              help="Each rank's host where the traces do not tell it: a mapping file (JSON {\"RANK\": \"HOST\"} or "
                   "lines 'RANK HOST'; a file name may stand for its rank), or N consecutive ranks per host.")
@click.option("--align/--no-align", default=True, show_default=True,
              help="Align the hosts' clocks (offsets estimated from collectives that span hosts) for waits, "
                   "skew, stragglers and the timeline; --no-align keeps each trace's raw clock.")
@click.option("--rederive", is_flag=True,
              help="PATHS is one run: derive its per-rank facts again from its own events (no traces needed).")
@click.option("--reduce", is_flag=True,
              help="PATHS is one run whose ranks' parts the profiler made (trace_handler(DIR, run=RUN)): build the "
                   "run from the parts present (the cross-rank work only); again to take in a late part.")
def ingest_cmd(paths, out, jobs, on_error, force, ranks, progress, scheduler, iteration, hosts, align, rederive,
               reduce):  # noqa: A002 - the option's name
    """Turn trace files (one per rank) into a Parquet run directory.

    PATHS are .json / .json.gz files, directories (searched recursively) or globs.

    \b
    Example:
      tracekit ingest traces/ -o run/
      tracekit ingest 'logs/**/*.pt.trace.json.gz' -o run/ --on-error skip
      tracekit ingest traces/ -o /shared/run/ --scheduler tcp://10.0.0.5:8786
      tracekit ingest traces/ -o s3://my-bucket/runs/job-1
      tracekit ingest traces/ -o run/ --hosts 8          (8 consecutive ranks per host)
      tracekit ingest --rederive run/
      tracekit ingest --reduce run/      (the ranks' parts that trace_handler(DIR, run="run/") made)
    """
    import time

    import tracekit

    from ..words import plural

    start = time.monotonic()
    if rederive:
        if len(paths) != 1 or out is not None:
            from ..errors import RunError
            raise RunError("--rederive takes one run directory and no -o: tracekit ingest --rederive RUN")
        tracekit.rederive(paths[0])
        click.echo(f"{paths[0]}: facts derived again from its events in {time.monotonic() - start:.1f} s")
        return
    if reduce:
        if len(paths) != 1 or out is not None:
            from ..errors import RunError
            raise RunError("--reduce takes one run directory and no -o: tracekit ingest --reduce RUN")
        from ..render.findings import rank_ranges

        done = tracekit.reduce(paths[0], iteration=iteration, hosts=hosts, align=align).reduced
        click.echo(f"{paths[0]}: {plural(len(done['ranks']), 'rank', 'ranks')} of {done['world']:,} reduced in "
                   f"{time.monotonic() - start:.1f} s")
        if done["missing"]:
            missing = rank_ranges(",".join(map(str, done["missing"])))
            click.echo(f"{paths[0]}: no part yet of {plural(len(done['missing']), 'rank', 'ranks')} ({missing}): "
                       "reduce again when they are written", err=True)
        return
    if out is None:
        raise click.UsageError("Missing option '-o' / '--out'.")
    run = tracekit.ingest(list(paths), out, jobs=jobs, on_error=on_error, force=force, ranks=_parse_ranks(ranks),
                          progress=progress, scheduler=scheduler, iteration=iteration, hosts=hosts, align=align)
    m = run.manifest
    if run.up_to_date:
        n = len(m["inputs"]) + len(m["failures"])
        click.echo(f"{out}: up to date ({plural(n, 'input', 'inputs')} unchanged); use --force to rebuild")
        return
    events = sum(i["events"] for i in m["inputs"])
    n = len(m["inputs"])
    click.echo(f"{out}: {plural(n, 'trace', 'traces')}, {plural(events, 'event', 'events')} in "
               f"{time.monotonic() - start:.1f} s")
    for fail in m["failures"]:  # the reason names the file (and where in it) first: name it once
        reason = fail["reason"]
        line = reason if reason.startswith(fail["path"]) else f"{fail['path']}: {reason}"
        click.echo(f"skipped {one_line(line)}", err=True)
