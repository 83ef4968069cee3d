"""One Chrome/Perfetto trace of the whole job (`tracekit timeline RUN -o merged.json.gz`).

Each rank is a process (pid = rank); its GPU streams and CPU threads are its tracks. tracekit adds, per
rank, a track of exposed communication (`comm_segments`: comm running, no compute) and a track with one
slice per clean collective instance spanning its ranks' first start to last end, flow arrows linking the
ranks of each instance, and an instant event on the rank that arrived last; and (without `kernels_only`) a
track of the critical path: each rank's pieces of it (tracekit/graph/track.py; not with `ranks`, since the
path crosses ranks and a few ranks' timeline reads no other rank's events). `steps` keeps only kernels
and ops of a step range; `kernels_only` keeps only comm and compute kernels (so that a 1,024-rank job
stays openable). Times are written exactly (microseconds with three decimals, from the nanoseconds).
Times are on the aligned clock (each host's offset from clock_offsets applied), so that ranks of several
hosts line up; a run ingested with --no-align shows the raw clocks. The output is JSON Object Format with
`traceEvents`: tracekit (and HTA, Perfetto) read it back.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import itertools
import json
import os
import shutil
from json.encoder import encode_basestring_ascii

from .. import settings
from ..errors import TracekitError
from ..layout.bind import rank_events, read_events, whole_schema
from ..layout.paths import is_packed, rank_parts
from ..spill import spill_dir

# every rank's times on the aligned clock (clock_offsets: its host's offset and drift), as the instances are:
# the rank's row of rank_clocks, read once and given to each rank's queries as parameters (a join with the
# view in every query cost as much as the query)
CLOCK = "CAST($offset_ns AS BIGINT), CAST($drift_ppm AS DOUBLE), CAST($ref_ns AS BIGINT)"
ALIGNED = f"tk_aligned(ts_ns, {CLOCK})"
ALIGNED_K = "tk_aligned(ts_ns, k.offset_ns, k.drift_ppm, k.ref_ns)"  # with a rank's row of clocks joined as k
EXPOSED_TID = 900001
INSTANCE_TID = 900002
CRITICAL_TID = 900003  # tracekit/graph/track.py writes it


def _us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}" if ns >= 0 else f"-{_us(-ns)}"


def _dur(dur_ns: int | None) -> str:
    """_ev's "dur" field: none for no duration, a negative one written as 0."""
    return "" if dur_ns is None else f',"dur":{_us(max(dur_ns, 0))}'


def _js(value) -> str:
    """json.dumps(value), quicker for a string (what json.dumps runs for one, without its dispatch)."""
    return encode_basestring_ascii(value) if type(value) is str else json.dumps(value)


@functools.lru_cache(maxsize=4096)
def _js_name(value) -> str:
    """_js of a name: kernel and op names repeat (a few thousand distinct in millions of events)."""
    return _js(value)


def _ev(ph: str, name: str, pid: int, tid: int, ts_ns: int, dur_ns: int | None = None, cat: str = "",
        args: dict | None = None, extra: str = "", args_text: str | None = None) -> str:
    """One event as JSON (``args_text``: the args already written as JSON, json.dumps(args, default=str))."""
    out = (f'{{"ph":"{ph}","cat":{_js_name(cat)},"name":{_js_name(name)},"pid":{pid},"tid":{tid},'
           f'"ts":{_us(ts_ns)}')
    if dur_ns is not None:
        out += f',"dur":{_us(max(dur_ns, 0))}'
    if args:
        args_text = json.dumps(args, default=str)
    if args_text:
        out += ',"args":' + args_text
    return out + extra + "}"


@functools.lru_cache(maxsize=4096)
def _kernel_args(kind, step) -> str:
    """A kernel's args as _ev writes {"kind": kind, "step": step}: few distinct pairs in a run."""
    return json.dumps({"kind": kind, "step": step}, default=str)


def _meta(pid: int, tid: int | None, name: str) -> str:
    kind = "thread_name" if tid is not None else "process_name"
    return json.dumps({"ph": "M", "name": kind, "pid": pid, "tid": 0 if tid is None else tid,
                       "args": {"name": name}})


def _spans(numbers: list[int]) -> str:
    """1,2,3,5 -> '1-3, 5'."""
    out, start = [], None
    for i, n in enumerate(numbers):
        if start is None:
            start = n
        if i + 1 == len(numbers) or numbers[i + 1] != n + 1:
            out.append(str(start) if start == n else f"{start}-{n}")
            start = None
    return ", ".join(out)


def cpu_track_name(pid, tid) -> str:
    """A CPU track's name: the trace's process and thread ids, and what stands for one it does not give as a
    number (an event without them, or with a name such as "Spans": never "None")."""
    if pid is None and tid is None:
        return "CPU, no process or thread id in the trace"
    return (f"CPU {pid if pid is not None else '(no process id)'} "
            f"thread {tid if tid is not None else '(no thread id)'}")


def _gzip_open(path: str, mode: str):
    """A .gz to write: ISA-L's igzip (python-isal, a dependency) at its default level, ten times quicker than
    zlib's level 9 (gzip.open's default: most of a 64-rank timeline's time went into it) for a file about
    half again as large; zlib at its own default level where python-isal is missing."""
    try:
        from isal import igzip
    except ImportError:
        return gzip.open(path, mode, compresslevel=6)
    return igzip.open(path, mode)


def _check_steps(run, lo: int, hi: int) -> None:
    have = [r["step"] for r in run.sql("SELECT DISTINCT step FROM steps ORDER BY step").to_pylist()]
    shown = f"{lo}:{hi}" if lo != hi else str(lo)
    if lo > hi:
        raise TracekitError(f"--steps {shown}: the first step is after the last; give A:B with A <= B")
    if not have:
        raise TracekitError(f"--steps {shown}: the traces hold no ProfilerStep, so there are no steps to keep; "
                            "leave out --steps (profile with torch.profiler.schedule and prof.step() to get them)")
    if not any(lo <= s <= hi for s in have):
        which = f"its only step is {have[0]}" if len(have) == 1 else f"its steps are {_spans(have)}"
        raise TracekitError(f"--steps {shown}: the run has no such step; {which}")


def write_timeline(run, out: str, steps: tuple[int, int] | None = None, kernels_only: bool = False,
                   ranks: tuple[int, int] | None = None) -> dict:
    """Write the merged trace to ``out`` (.json or .json.gz); returns counts of what was written.
    ``steps`` (A, B) keeps steps A to B; a range that holds none of the run's steps is an error naming them.
    ``ranks`` (A, B) keeps ranks A to B (an instance's slice still spans its first start to last end)."""
    lo, hi = steps if steps else (None, None)
    if steps is not None:
        _check_steps(run, int(lo), int(hi))
    in_ranks = "TRUE" if ranks is None else f"rank BETWEEN {int(ranks[0])} AND {int(ranks[1])}"
    in_range = ("TRUE" if steps is None else f"step BETWEEN {int(lo)} AND {int(hi)}") + f" AND {in_ranks}"
    kinds = "kind IN ('comm', 'compute')" if kernels_only else "kind IN ('comm', 'compute', 'memory', 'other')"
    counts = {"kernels": 0, "cpu_ops": 0, "exposed": 0, "instances": 0, "flows": 0, "stragglers": 0}
    opener = _gzip_open if out.endswith(".gz") else open
    tmp = f"{out}.tmp-{os.getpid()}"
    first = [True]
    try:
        with _bounded(run, os.path.dirname(os.path.abspath(out))) as run, opener(tmp, "wt") as f:
            buf: list[str] = []  # events written a few thousand at a time: one write per event cost as much

            def flush() -> None:
                if buf:
                    f.write(("" if first[0] else ",\n") + ",\n".join(buf))
                    first[0] = False
                    buf.clear()

            def put(text: str) -> None:
                buf.append(text)
                if len(buf) >= 4096:
                    flush()

            f.write('{"schemaVersion":1,"displayTimeUnit":"ms","traceName":"tracekit timeline",'
                    '"traceEvents":[\n')
            tracks: dict[tuple[int, str], int] = {}

            def track(rank: int, label: str, base: int) -> int:
                """The tid of a rank's track named ``label``: base + how many tracks the rank had before it;
                its name's metadata event is written the first time."""
                key = (rank, label)
                if key not in tracks:
                    tracks[key] = base + sum(1 for k in tracks if k[0] == rank)
                    put(_meta(rank, tracks[key], label))
                return tracks[key]

            shown = [r for (r,) in run.execute(f"SELECT rank FROM traces WHERE {in_ranks} "
                                                   "ORDER BY rank").fetchall()]
            for rank in shown:
                put(_meta(rank, None, f"rank {rank}"))
                put(_meta(rank, EXPOSED_TID, "tracekit: exposed communication"))
                put(_meta(rank, INSTANCE_TID, "tracekit: collective instances"))
            # rank by rank, each sorted by DuckDB within timeline_memory() (spilling past it): the memory of a
            # 43M-event run is not the memory of sorting all its events at once; events at one time come in
            # their order in the trace (event_index), whatever order the files were read in
            clocks = {r: {"offset_ns": o, "drift_ppm": d, "ref_ns": ref} for r, o, d, ref in run.execute(
                f"SELECT rank, offset_ns, drift_ppm, ref_ns FROM rank_clocks WHERE {in_ranks}").fetchall()}
            q = (f"SELECT rank, device, stream, name, cat, kind, {ALIGNED_K} AS ts_ns, dur_ns, step FROM gpu_kernels "
                 f"JOIN {{clocks}} USING (rank) WHERE {kinds} AND {in_range} AND {{ranks}} "
                 "ORDER BY rank, ts_ns, event_index")
            for rank, device, stream, name, cat, kind, ts, dur, step in _per_ranks(run, q, shown, clocks):
                tid = track(rank, f"GPU {device} stream {stream}", 100000)
                # _ev("X", name, rank, track, ts, dur, cat=cat, args_text=_kernel_args(kind, step)), inline
                put(f'{{"ph":"X","cat":{_js_name(cat)},"name":{_js_name(name)},"pid":{rank},"tid":{tid},'
                    f'"ts":{_us(ts)}{_dur(dur)},"args":{_kernel_args(kind, step)}}}')
                counts["kernels"] += 1
            if not kernels_only:
                # each rank's events from its own files: a few ranks of a big run never open every rank's
                q = ("SELECT rank, pid, tid, name, cat, {aligned} AS ts_ns, dur_ns FROM ({events}) e {join} "
                     "WHERE ph = 'X' AND coalesce(cat, '') NOT IN ('kernel', 'gpu_memcpy', 'gpu_memset') "
                     "AND {span} ORDER BY rank, ts_ns, e.event_index")
                spans = None if steps is None else _step_spans(run, int(lo), int(hi), in_ranks)
                for rank, pid, tid, name, cat, ts, dur in _per_rank_events(run, q, shown, clocks, spans):
                    cpu_tid = track(rank, cpu_track_name(pid, tid), 200000)
                    # _ev("X", name or "", rank, track, ts, dur, cat=cat or ""), inline
                    put(f'{{"ph":"X","cat":{_js_name(cat or "")},"name":{_js_name(name or "")},"pid":{rank},'
                        f'"tid":{cpu_tid},"ts":{_us(ts)}{_dur(dur)}}}')
                    counts["cpu_ops"] += 1
            seg_range = "TRUE" if steps is None else f"comm_step BETWEEN {int(lo)} AND {int(hi)}"
            q = (f"SELECT rank, {ALIGNED_K} AS ts_ns, tk_aligned(end_ns, k.offset_ns, k.drift_ppm, k.ref_ns) AS end_ns "
                 "FROM comm_segments JOIN {clocks} USING (rank) WHERE comm_active > 0 AND compute_active = 0 "
                 f"AND {seg_range} AND {{ranks}} ORDER BY rank, ts_ns")
            for rank, ts, end in _merged(_per_ranks(run, q, shown, clocks)):
                put(_ev("X", "exposed comm", rank, EXPOSED_TID, ts, end - ts, cat="tracekit"))
                counts["exposed"] += 1
            _instances(run, put, counts, steps, ranks)
            if not kernels_only and ranks is None:  # the critical path's pieces (it needs every rank's events)
                from ..graph.track import critical_track

                counts["critical"] = critical_track(run, put, _ev, CRITICAL_TID, shown, steps)
            flush()
            f.write("\n]}\n")
        os.replace(tmp, out)
    except OSError as exc:
        raise TracekitError(f"{out}: cannot write it ({exc.strerror or exc}); check that its directory exists and "
                            "is writable") from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return counts


def _instances(run, put, counts: dict, steps, ranks=None) -> None:
    rng = "" if steps is None else (
        f"AND i.instance_key IN (SELECT w.instance_key FROM collective_waits w JOIN _collectives c "
        f"USING (rank, event_index) WHERE c.step BETWEEN {int(steps[0])} AND {int(steps[1])})")
    # the ranks drawn are listed, not every member: a collective spanning 4,096 ranks is one count
    shown_ranks = "TRUE" if ranks is None else f"w.rank BETWEEN {int(ranks[0])} AND {int(ranks[1])}"
    q = ("SELECT i.instance_key, i.collective, i.bytes, i.start_skew_ns, i.last_rank, i.first_start_ns, "
         f"i.last_start_ns, list(w.rank ORDER BY w.rank) FILTER (WHERE {shown_ranks}), count(*), max(w.end_ns) "
         "FROM collective_instances i JOIN collective_waits w USING (instance_key) "
         f"WHERE i.status = 'clean' {rng} GROUP BY ALL HAVING count(*) FILTER (WHERE {shown_ranks}) > 0 "
         "ORDER BY i.first_start_ns, i.instance_key")
    flow = 0
    for key, coll, nbytes, skew, last, first_ns, last_ns, shown, members, end_ns in _rows(run, q):
        args = {"instance": key, "bytes": None if nbytes is None else int(nbytes), "start_skew_us": skew / 1e3,
                "last_rank": last}
        for r in shown:
            put(_ev("X", coll, r, INSTANCE_TID, first_ns, end_ns - first_ns, cat="tracekit", args=args))
        counts["instances"] += 1
        for a, b in itertools.pairwise(shown):  # an arrow from each rank of the instance to the next
            flow += 1
            put(_ev("s", coll, a, INSTANCE_TID, first_ns, cat="tracekit-instance", extra=f',"id":{flow}'))
            put(_ev("f", coll, b, INSTANCE_TID, first_ns, cat="tracekit-instance", extra=f',"id":{flow},"bp":"e"'))
            counts["flows"] += 1
        if members > 1 and skew > 0 and last in shown:
            put(_ev("i", f"straggler: rank {last} arrived last", last, INSTANCE_TID, last_ns, cat="tracekit",
                    args={"waited_us": skew / 1e3}, extra=',"s":"t"'))
            counts["stragglers"] += 1


@contextlib.contextmanager
def _bounded(run, near: str):
    """A Run of its own on the version ``run`` reads, within settings.derive_memory_mb() of memory, spilling
    past it to a directory made beside the output; closed, and the directory removed, after. Not ``run``'s
    own connection: DuckDB cannot switch a temporary directory back once it has spilled there ("Cannot
    switch temporary directory after the current one has been used": the timeline of a run that spilled
    ended in an internal error), and the caller's Run keeps its settings. At least 64 MB per DuckDB thread."""
    from ..store import Run

    spill = spill_dir(".tracekit-timeline-", near=near, make=True)
    own = None
    try:
        own = Run(run.version, size_buckets=run.size_buckets)
        own.name = run.name
        budget = settings.derive_memory_mb()
        own.execute(f"SET memory_limit = '{budget}MB'")
        # a sort needs some memory per thread whatever it spills: 64 MB on two threads ran out of it (250k
        # CPU ops of one rank), on one thread 1M passed; so at least 64 MB a thread
        (threads,) = own.execute("SELECT current_setting('threads')").fetchone()
        own.execute(f"SET threads = {max(1, min(int(threads), budget // 64))}")
        own.execute("SET temp_directory = '" + spill.replace("'", "''") + "'")
        yield own
    finally:
        if own is not None:
            own.close()
        shutil.rmtree(spill, ignore_errors=True)


def _clock_row(rank: int, offset_ns: int, drift_ppm: float, ref_ns: int) -> str:
    """A rank's row of rank_clocks as a SQL row of literals, of the view's types (a double by its repr: exact)."""
    return (f"(CAST({int(rank)} AS BIGINT), CAST({int(offset_ns)} AS BIGINT), CAST('{float(drift_ppm)!r}' AS DOUBLE), "
            f"CAST({int(ref_ns)} AS BIGINT))")


RANKS_PER_QUERY = 64  # the stored facts of this many ranks are read and sorted together


def _per_ranks(run, query: str, ranks: list[int], clocks: dict):
    """The rows of ``query`` for RANKS_PER_QUERY ranks at a time (one query read them one rank at a time, a
    scan of a compacted facts file for each): {ranks} their condition, {clocks} their rows of rank_clocks
    as literal rows ``k`` (the view in every query cost as much as the query). The query orders by rank."""
    for i in range(0, len(ranks), RANKS_PER_QUERY):
        chunk = ranks[i:i + RANKS_PER_QUERY]
        values = ", ".join(_clock_row(r, **clocks[r]) for r in chunk)
        yield from _rows(run, query.format(ranks=f"rank BETWEEN {int(chunk[0])} AND {int(chunk[-1])}",
                                           clocks=f"(VALUES {values}) AS k(rank, offset_ns, drift_ppm, ref_ns)"))


def _step_spans(run, lo: int, hi: int, in_ranks: str) -> dict:
    """rank -> the CPU spans [ts_ns, end_ns) of its steps lo to hi, raw clock."""
    out: dict = {}
    for rank, ts, end in run.execute(f"SELECT rank, ts_ns, end_ns FROM steps WHERE step BETWEEN {lo} AND {hi} "
                                         f"AND {in_ranks} ORDER BY rank, ts_ns").fetchall():
        out.setdefault(rank, []).append((ts, end))
    return out


def _per_rank_events(run, query: str, ranks: list[int], clocks: dict, spans: dict | None):
    """The rows of ``query`` for each rank in turn: {events} that rank's own files, {span} its events inside
    one of its ``spans`` (every event when None), {aligned} the time on its clock ({join} the clocks' rows
    where given as a table). The ranks of a packed events file (many small ranks: tracekit/pack_events.py)
    are read RANKS_PER_QUERY at a time from it, their clocks as literal rows ``k``: a query per rank of
    10,000 ranks was most of the timeline's time. The query orders by rank."""
    packed: dict[str, list[int]] = {}
    run.fetch_events()  # (a run read from an object store: its events, if not fetched yet)
    for rank in ranks:
        try:
            files = rank_parts(run.version, rank)
        except FileNotFoundError:  # a rank whose trace held no event
            continue
        if not files or (spans is not None and rank not in spans):
            continue
        if is_packed(files[0]):  # (in rank order: a packed file holds consecutive ranks)
            packed.setdefault(files[0], []).append(rank)
            if len(packed[files[0]]) < RANKS_PER_QUERY:
                continue
            yield from _packed_rows(run, query, files[0], packed.pop(files[0]), clocks, spans)
            continue
        for f, held in list(packed.items()):  # (ranks in order: what is pending comes before this rank)
            yield from _packed_rows(run, query, f, held, clocks, spans)
            del packed[f]
        yield from _rows(run, query.format(events=rank_events(files, rank), span=_span_of(spans, rank),
                                           aligned=ALIGNED, join=""), params=clocks[rank])
    for f, held in packed.items():
        yield from _packed_rows(run, query, f, held, clocks, spans)


def _span_of(spans: dict | None, rank: int) -> str:
    if spans is None:
        return "TRUE"
    return "(" + " OR ".join(f"(e.ts_ns >= {int(a)} AND e.ts_ns < {int(b)})" for a, b in spans[rank]) + ")"


def _packed_rows(run, query: str, path: str, held: list[int], clocks: dict, spans: dict | None):
    """``query``'s rows for ranks ``held`` of packed file ``path``, in one query."""
    events = whole_schema(f"SELECT * FROM {read_events([path])} WHERE rank IN ({', '.join(str(int(r)) for r in held)})")
    span = "TRUE" if spans is None else "(" + " OR ".join(
        f"(e.rank = {int(r)} AND {_span_of(spans, r)})" for r in held) + ")"
    values = ", ".join(_clock_row(r, **clocks[r]) for r in held)
    yield from _rows(run, query.format(events=events, span=span, aligned=ALIGNED_K,
                                       join=f"JOIN (VALUES {values}) AS k(rank, offset_ns, drift_ppm, ref_ns) "
                                            "USING (rank)"))


def _rows(run, query: str, batch: int = 50000, params: dict | None = None):
    cur = run.execute(query, params) if params else run.execute(query)
    while True:
        rows = cur.fetchmany(batch)
        if not rows:
            return
        yield from rows


def _merged(rows):
    """Adjacent segments of one rank merged into one slice."""
    cur = None
    for rank, ts, end in rows:
        if cur and cur[0] == rank and cur[2] == ts:
            cur[2] = end
            continue
        if cur:
            yield tuple(cur)
        cur = [rank, ts, end]
    if cur:
        yield tuple(cur)
