"""`tracekit whatif RUN --fix-rank / --comm-speedup / --overlap`: each rank's step replayed with the changes
(the counterfactuals of tracekit/graph/counterfactual.py), beside measured."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

from ..errors import TracekitError, UsageError
from ..graph.counterfactual import comm_changed, job_step_ms, measured_job_step_ms, ranks_at_pace
from ..graph.split import split

# --- tracekit whatif RUN --fix-rank / --comm-speedup / --overlap ------------------------------------------

def _roles(run, groups) -> dict[str, set]:
    """role -> the labels of the groups that play it (recorded, described or inferred: run_plan)."""
    from ..run_plan import resolve

    try:
        rp = resolve(run)
    except TracekitError:
        return {}
    out: dict[str, set] = {}
    for g in groups:
        role, _ = rp.role_and_source(min(g["ranks"]), g)
        if role != "unknown":
            out.setdefault(role, set()).add(g["group_label"])
    return out


def one_rank_refusal(run, what: str) -> str:
    """Why a counterfactual of other ranks or of transfers cannot be replayed on a run of one rank."""
    return (f"{run.name}: {what} needs the other ranks of the job: with one rank traced, its collectives' "
            "kernel time holds both the transfer and the waiting for ranks the run does not have, which the "
            "trace cannot separate; ingest every rank's trace (tracekit whatif RUN --overlap GROUP gives an "
            "upper bound of hiding a group's collectives)")


MIN_SPEEDUP = 1e-3  # transfers at most 1000x slower: the replay adds int64 ns (1e-15 overflowed it)


def predict(run, fix_ranks=(), comm_speedup: float | None = None, overlap=()) -> pa.Table:
    """Each rank's step (mean over steps) measured, replayed as is, and replayed with the changes: the
    ranks of ``fix_ranks`` at the median rank's pace (ranks_at_pace: start, host idle, CPU work and GPU
    compute), every transfer ``comm_speedup`` times faster, the collectives of the groups in ``overlap`` hidden."""
    from ..table_meta import NOTE_KEY

    if comm_speedup is not None and not (math.isfinite(comm_speedup) and comm_speedup >= MIN_SPEEDUP):
        raise TracekitError(f"--comm-speedup {comm_speedup:g}: give a finite factor of at least {MIN_SPEEDUP:g} (2: "
                            "transfers twice as fast, 0.5: twice as slow); a smaller one is past what the replay's "
                            "nanosecond clock holds")
    if not run.sql("SELECT 1 FROM steps LIMIT 1").num_rows:
        raise TracekitError(f"{run.name}: the traces hold no ProfilerStep: there is no step to replay (profile with "
                            "torch.profiler's schedule and prof.step())")
    sp = split(run)
    known = set(int(r) for r in sp.ranks)
    if (fix_ranks or comm_speedup) and len(known) < 2:
        raise TracekitError(one_rank_refusal(run, "--fix-rank" if fix_ranks else "--comm-speedup"))
    bad = [r for r in fix_ranks if r not in known]
    if bad:
        raise UsageError(f"{run.name}: no rank {bad[0]} in the replay; its ranks are "
                            f"{', '.join(map(str, sorted(known)))}")
    labels = sorted({g["group_label"] for g in sp.groups})
    roles = _roles(run, sp.groups)
    named = []
    for name in overlap:  # a group's label, or a role (DP, TP, PP, EP) standing for its groups
        if name in labels:
            named.append(name)
        elif name.upper() in roles:
            named += sorted(roles[name.upper()])
        else:
            raise UsageError(f"{run.name}: no group {name!r} with matched collectives; groups: "
                                f"{', '.join(labels) or 'none'}"
                                + (f"; roles: {', '.join(sorted(roles))}" if roles else "")
                                + " (tracekit report RUN collectives)")
    overlap = tuple(dict.fromkeys(named))
    base = sp.replay()
    dur, gap = ranks_at_pace(sp, fix_ranks)
    if comm_speedup:
        dur = comm_changed(sp, None, "speedup", comm_speedup, durations=dur)
    for gi, grp in enumerate(sp.groups):
        if grp["group_label"] in overlap:
            dur = comm_changed(sp, gi, "hidden", durations=dur)
    new = sp.replay(durations=dur, gaps=gap)
    a, b = base.steps(), new.steps()
    rows = []
    for r in sorted(known):
        m = np.asarray(a.column("rank").to_numpy()) == r
        meas = np.asarray(a.column("measured_ms").to_numpy(zero_copy_only=False), dtype=float)[m]
        rep = np.asarray(a.column("replayed_ms").to_numpy(zero_copy_only=False), dtype=float)[m]
        pred = np.asarray(b.column("replayed_ms").to_numpy(zero_copy_only=False), dtype=float)[m]
        if len(meas):
            rows.append({"rank": r, "measured_ms": float(meas.mean()), "replayed_ms": float(rep.mean()),
                         "predicted_ms": float(pred.mean()), "change_ms": float(pred.mean() - rep.mean())})
    changes = ([f"rank{'s' if len(fix_ranks) > 1 else ''} {', '.join(map(str, fix_ranks))} at the median "
                "rank's pace"] if fix_ranks else []) + \
              ([f"transfers {comm_speedup:g}x faster"] if comm_speedup else []) + \
              [f"group {g} overlapped (its transfers hidden)" for g in overlap]
    note = (f"{'; '.join(changes) or 'no change'}: the replayed step (one step's last work on any rank to the next "
            "one's, mean over steps; not the job's step that advise's percents are of, the longest rank's "
            f"ProfilerStep per step, mean over steps, which also holds the time before its last rank starts) measured "
            f"{measured_job_step_ms(base):,.3f} ms, replayed as is {job_step_ms(base):,.3f} ms, "
            f"predicted {job_step_ms(new):,.3f} ms ({job_step_ms(new) - job_step_ms(base):+,.3f} ms against the replay "
            "as is); per rank: its own step, mean over steps")
    schema = pa.schema([("rank", pa.int64()), ("measured_ms", pa.float64()), ("replayed_ms", pa.float64()),
                        ("predicted_ms", pa.float64()), ("change_ms", pa.float64())])
    return pa.Table.from_pylist(rows, schema=schema).replace_schema_metadata({NOTE_KEY: note.encode()})

