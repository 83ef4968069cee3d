"""Counterfactual replays: the run's dependency graph replayed with one cause removed, on the graph whose
step threads are split into work, host idle and waiting (split.py): a library of graph operations that
advise (commands/advise_replay.py) and whatif's replays (commands/whatif_replay.py) share.

The counterfactuals (docs/advise.md): late ranks at the pace of the median rank (its start, or its host
idle, CPU work or GPU compute brought to the lower median over ranks segment by segment, by at most its
excess over whole steps), a group's collectives at its best measured bus bandwidth, a group's collectives
overlapped (their transfer hidden: an upper bound), every transfer sped up. The saving is the replayed
step as is minus the replayed step so changed; the job's step (_span_ms) is the time from one step's last
work to the next one's, the mean over the profiled steps.
"""

from __future__ import annotations

import numpy as np

from ..errors import TracekitError
from .model import Graph
from .split import Split, split  # noqa: F401 (split: the graph the counterfactuals change)

LATE_MIN_MS = 0.01  # a rank is late by this much or more per step (and by LATE_MIN_SHARE of the step)
LATE_MIN_SHARE = 0.01


# --- what a replay says -------------------------------------------------------------------------------

def _span_ms(g: Graph, start: np.ndarray, end: np.ndarray) -> float:
    """The job's step, ms: per step, from the end of the previous step's last work on any rank to the end of
    its own (a step whose previous one was not profiled: from its latest rank's measured ProfilerStep start,
    so that what the ranks did before the profile, a warm-up step's tail on one of them, is not counted in
    it); the
    mean over steps, which over consecutive steps is the first step's start to the last one's end over
    their number. A saving so measured is how much sooner the job gets through its steps: a change that
    lets one rank start its steps earlier while the last work ends as late saves nothing."""
    in_step = (g.step >= 0) & (g.rank >= 0)
    steps, inv = np.unique(g.step[in_step], return_inverse=True)
    last = np.full(len(steps), np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(last, inv, end[in_step])
    first = np.full(len(steps), np.iinfo(np.int64).min, dtype=np.int64)
    starts = g.kind[in_step] == "step_start"
    # (measured, in every replay: a change that lets the latest rank start sooner then ends the step sooner,
    # not later; taken from the replay, moving that start moved the reference and read as a slower step)
    np.maximum.at(first, inv[starts], g.ts_ns[in_step][starts])
    ok = first > np.iinfo(np.int64).min
    if not ok.any():
        return 0.0
    steps, first, last = steps[ok], first[ok], last[ok]
    prev = np.concatenate([[False], np.diff(steps) == 1])
    begin = np.where(prev, np.concatenate([[0], last[:-1]]), first)
    return float(np.mean(last - begin)) / 1e6


def job_step_ms(rep) -> float:
    """The job's step of a replay (_span_ms), ms."""
    return _span_ms(rep.graph, rep.start_ns, rep.end_ns)


def measured_job_step_ms(rep) -> float:
    g = rep.graph
    return _span_ms(g, g.ts_ns, g.ts_ns + g.dur_ns)


def replay_error_pct(rep) -> float | None:
    """The replay's largest error over ranks and steps, % (as is, against the trace)."""
    err = rep.steps().column("error_pct").to_pylist()
    err = [abs(e) for e in err if e is not None]
    return max(err) if err else None


# --- the causes removed ---------------------------------------------------------------------------------

def per_rank_step(sp: Split, values: np.ndarray, mask: np.ndarray, by_edge: bool = False) -> dict:
    """{(rank, step): sum of values} over the nodes (or edges, by their destination) in mask."""
    g = sp.graph
    idx = np.flatnonzero(mask)
    where = g.dst[idx] if by_edge else idx
    ok = (g.step[where] >= 0) & (g.rank[where] >= 0)
    keys = (g.rank[where][ok] << 32) + g.step[where][ok]
    uniq, inv = np.unique(keys, return_inverse=True)
    sums = np.bincount(inv, weights=values[idx][ok].astype(float), minlength=len(uniq))
    return {(int(k >> 32), int(k & 0xFFFFFFFF)): int(v) for k, v in zip(uniq, sums, strict=True)}


def pace(per: dict, ranks, steps=None) -> tuple[dict, dict]:
    """Per step, the lower median over ranks (the pace); per rank, its mean excess over it per step, ns.
    ``steps``: the steps to average over (default: those ``per`` holds; a step where no rank has any of it
    counts too: one 5 ms stall in one of four steps is 1.25 ms a step, not 5)."""
    steps = sorted(set(steps) if steps is not None else {s for _, s in per})
    lower = {}
    for s in steps:
        v = sorted(per.get((r, s), 0) for r in ranks)
        lower[s] = v[(len(v) - 1) // 2]
    excess = {int(r): float(np.mean([per.get((int(r), s), 0) - lower[s] for s in steps])) if steps else 0.0
              for r in ranks}
    return lower, excess


P2P = ("send", "recv", "sendrecv")


def _segment_ends(sp: Split) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The ranks' arrivals at their collectives (not point-to-point, whose two ranks do different work),
    the ends of their steps' segments: (rank, time, hub node, step), sorted by rank and time."""
    g = sp.graph
    coll = np.flatnonzero(g.edge_kind == "collective")
    out_of_hub = coll[g.kind[g.src[coll]] == "hub"]
    gi = sp.transfer_group[g.dst[out_of_hub]]
    p2p = np.zeros(len(g.node_id), dtype=bool)  # per hub: point-to-point (or of no known collective)
    p2p[g.src[out_of_hub]] = True
    known = gi >= 0
    p2p[g.src[out_of_hub][known]] = [sp.groups[i]["collective"] in P2P for i in gi[known]]
    into = coll[g.kind[g.dst[coll]] == "hub"]
    into = into[~p2p[g.dst[into]] & (g.step[g.src[into]] >= 0)]
    a, h = g.src[into], g.dst[into]
    order = np.lexsort((g.ts_ns[a], g.rank[a]))
    return g.rank[a][order], g.ts_ns[a][order], h[order], g.step[a][order]


def _segment_of(sp: Split, ends, where: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per element (a node ``where`` at time ``t``): its segment, the hub of its rank's next collective of the
    same step (>= 0), or -1 - step after the step's last (the step's tail)."""
    g = sp.graph
    rank, step = g.rank[where], g.step[where]
    seg = -1 - step
    e_rank, e_t, e_hub, e_step = ends
    if not len(e_rank) or not len(where):
        return seg
    t0 = min(int(e_t.min()), int(t.min()))
    span = max(int(e_t.max()), int(t.max())) - t0
    shift = max(span.bit_length(), 1)
    if int(max(e_rank.max(), rank.max())) >= (1 << (62 - shift)):
        raise TracekitError("the replay's segments: the trace spans too long a time to key by rank and time")
    key_e = (e_rank << shift) + (e_t - t0)
    key = (rank << shift) + (t - t0)
    i = np.searchsorted(key_e, key, side="left")
    j = np.minimum(i, len(key_e) - 1)
    ok = (i < len(key_e)) & (e_rank[j] == rank) & (e_step[j] == step)
    return np.where(ok, e_hub[j], seg)


def _lower_median(values: list) -> float:
    v = sorted(values)
    return v[(len(v) - 1) // 2]


def at_pace(sp: Split, what: str, late: list[int], durations=None, gaps=None):
    """Durations and gaps with the late ranks' host idle ('idle'), step-thread work ('work') or GPU compute
    ('compute') brought to the pace of the lower median over ranks, segment by segment. A segment is the
    part of a step up to one of the rank's collectives (not point-to-point), or after the last: ranks that
    run the same program (data, tensor parallel) have the same segments, so a late rank's excess is
    removed where it lies, not spread over its whole step. What a step loses is at most the rank's excess
    over the pace of whole steps (the late rank's extra time), shared among its segments above their pace
    in proportion: with two ranks the pace of a segment is the other rank's, and the noise of each segment
    is not an excess. GPU compute is paced kernel by kernel, and a thread's work piece by piece (its runtime
    calls, and its time before each of the graph's nodes): matched across ranks by name and order (the k-th
    of a name in the segment), a late rank's piece longer than its match's pace is cut towards it.
    (Scaling every kernel of the segment by one factor shortened the kernels that ran beside the slow one
    on other streams at their own pace, and left the slow one too long: a 600 us gemm beside a 250 us
    kernel on another stream, at a 300 us pace, came to 388 us, and the step saved 0.212 of 0.300 ms; with
    three such kernels beside it, 0.124. Likewise a 300 us op before a late rank's first launch: cut a
    little everywhere, most of it stayed before that launch, 0.087 of 0.099 ms saved.) A rank's host idle
    is paced by segment: its idle intervals have no counterpart on the others."""
    g = sp.graph
    dur = g.dur_ns.copy() if durations is None else durations.copy()
    gap = sp.base_gaps() if gaps is None else gaps.copy()
    if what == "start":
        return dur, _start_at_pace(sp, late, gap)
    if what == "work":  # the threads' time between the graph's nodes, and their runtime calls' own time
        # (a rank whose launch calls take 40 us where the others' take 10 was at the pace already)
        e, n = np.flatnonzero(sp.work_edge & (gap > 0)), np.flatnonzero((g.kind == "call") & (dur > 0))
        idx = np.concatenate([e, n])
        node = np.concatenate([np.zeros(len(e), dtype=bool), np.ones(len(n), dtype=bool)])
        where = np.concatenate([g.dst[e], n])
        t = np.concatenate([g.ts_ns[g.src[e]] + g.dur_ns[g.src[e]], g.ts_ns[n]])
        val = np.concatenate([gap[e], dur[n]])
    else:
        idx = np.flatnonzero(sp.host_idle if what == "idle" else _compute_mask(g))
        where, t, val = idx, g.ts_ns[idx], g.dur_ns[idx]
        node = np.ones(len(idx), dtype=bool)
    ok = (g.step[where] >= 0) & (g.rank[where] >= 0)
    idx, where, t, val, node = idx[ok], where[ok], t[ok], val[ok], node[ok]
    late = set(int(r) for r in late)
    if not len(idx) or not late:
        return dur, gap
    ends = _segment_ends(sp)
    seg = _segment_of(sp, ends, where, t)
    members: dict[int, list] = {}  # segment -> the ranks that have it
    for r, h in zip(ends[0].tolist(), ends[2].tolist(), strict=True):
        members.setdefault(h, []).append(r)
    rank, step = g.rank[where], g.step[where]
    if what == "idle":  # a rank's idle intervals have no counterpart on another rank: paced by segment
        slot = seg
    else:  # what is paced across ranks: a kernel, a runtime call, the thread's work before a node
        names = g.name[where].astype(str)
        if what == "work":
            names = np.where(node, names, np.char.add("before ", names))
        _, slot = np.unique(_slots(names, g.rank[where], seg, t), return_inverse=True)
    keys = (rank << 40) + (slot + (1 << 39))
    uniq, first, inv = np.unique(keys, return_index=True, return_inverse=True)
    sums = np.bincount(inv, weights=val.astype(float), minlength=len(uniq)).tolist()
    u_rank, u_slot, u_step = rank[first].tolist(), slot[first].tolist(), step[first].tolist()
    u_seg = seg[first].tolist()
    at = {(r, s_): v for r, s_, v in zip(u_rank, u_slot, sums, strict=True)}
    totals: dict[tuple, float] = {}  # (rank, step) -> its part of the step
    for r, st, v in zip(u_rank, u_step, sums, strict=True):
        totals[(r, st)] = totals.get((r, st), 0.0) + v
    all_ranks = [int(r) for r in sp.ranks]
    step_pace = {st: _lower_median([totals.get((q, st), 0.0) for q in all_ranks]) for st in set(u_step)}
    late_slots = {(s_, sg) for s_, sg, r in zip(u_slot, u_seg, u_rank, strict=True) if r in late}
    slot_pace = {s_: _lower_median([at.get((q, s_), 0.0) for q in (members.get(sg, all_ranks) if sg >= 0
                                                                    else all_ranks)])
                 for s_, sg in late_slots}
    cut = [0.0] * len(uniq)  # what each (late rank, slot) loses
    above: dict[tuple, float] = {}  # (rank, step) -> the sum of its slots' excesses
    for u, (r, s_, st, own) in enumerate(zip(u_rank, u_slot, u_step, sums, strict=True)):
        if r in late and own > slot_pace[s_]:
            cut[u] = own - slot_pace[s_]
            above[(r, st)] = above.get((r, st), 0.0) + cut[u]
    scale = np.ones(len(uniq))
    for u, (r, st, own) in enumerate(zip(u_rank, u_step, sums, strict=True)):
        if cut[u] > 0:
            excess = max(totals[(r, st)] - step_pace[st], 0.0)
            share = min(1.0, excess / above[(r, st)])
            scale[u] = (own - cut[u] * share) / own
    if (scale == 1).all():
        return dur, gap
    f = scale[inv]
    ge, gn = idx[~node], idx[node]
    gap[ge] = np.where(f[~node] < 1, np.round(gap[ge] * f[~node]), gap[ge]).astype(np.int64)
    dur[gn] = np.where(f[node] < 1, np.round(dur[gn] * f[node]), dur[gn]).astype(np.int64)
    return dur, gap


def _slots(names: np.ndarray, rank: np.ndarray, seg: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per element (a kernel, a runtime call, the thread's work before a node: ``names``, on ``rank``,
    starting at ``t``, in segment ``seg``): a key that the same element of every rank shares: (segment, name,
    k) for the k-th element of its name in its rank's segment, in time order."""
    _, name = np.unique(names, return_inverse=True)
    order = np.lexsort((t, name, seg, rank))
    r_o, s_o, n_o = rank[order], seg[order], name[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (r_o[1:] != r_o[:-1]) | (s_o[1:] != s_o[:-1]) | (n_o[1:] != n_o[:-1])
    starts = np.flatnonzero(new)
    k_o = np.arange(len(order)) - np.repeat(starts, np.diff(np.append(starts, len(order))))
    k = np.empty(len(order), dtype=np.int64)
    k[order] = k_o
    return np.rec.fromarrays([seg, name, k])


def _start_lags(sp: Split, gap: np.ndarray) -> dict:
    """Per rank, how long after the job's first rank it starts its first step, ns."""
    e = np.flatnonzero(sp.start_edge)
    return {int(sp.graph.rank[sp.graph.dst[i]]): int(gap[i]) for i in e}


def _start_at_pace(sp: Split, late: list[int], gap: np.ndarray) -> np.ndarray:
    """Gaps with the late ranks starting their first step at the lower median rank's lag."""
    lags = _start_lags(sp, gap)
    low = sorted(lags.values())[(len(lags) - 1) // 2] if lags else 0
    gap = gap.copy()
    for i in np.flatnonzero(sp.start_edge):
        if int(sp.graph.rank[sp.graph.dst[i]]) in late:
            gap[i] = min(gap[i], low)
    return gap


def _compute_mask(g: Graph) -> np.ndarray:
    return np.isin(g.kind, ("kernel", "memory"))


def steps_of(sp: Split) -> list[int]:
    """The profiled steps the graph holds."""
    st = sp.graph.step
    return sorted(int(s) for s in np.unique(st[st >= 0]))


def _per_step(sp: Split, what: str) -> dict:
    """{(rank, step): ns} of cause ``what`` (idle, work, compute; CAUSES but start)."""
    g = sp.graph
    if what == "work":  # the threads' time between nodes and their runtime calls' own (at_pace's)
        per = per_rank_step(sp, sp.base_gaps(), sp.work_edge, by_edge=True)
        for k, v in per_rank_step(sp, g.dur_ns, g.kind == "call").items():
            per[k] = per.get(k, 0) + v
        return per
    return per_rank_step(sp, g.dur_ns, sp.host_idle if what == "idle" else _compute_mask(g))


def step_excess(sp: Split, what: str) -> dict[int, dict[int, float]]:
    """Per rank and profiled step, its excess over the pace (the lower median over ranks) in cause ``what``
    (idle, work, compute), ms: where a late rank's mean excess (late_ranks) lies."""
    per = _per_step(sp, what)
    steps = steps_of(sp)
    lower, _ = pace(per, sp.ranks, steps)
    return {int(r): {s: (per.get((int(r), s), 0) - lower[s]) / 1e6 for s in steps} for r in sp.ranks}


def late_ranks(sp: Split, what: str, step_ms: float) -> tuple[list[int], dict]:
    """The ranks whose host idle / work / compute per step exceeds the pace by LATE_MIN_MS and
    LATE_MIN_SHARE of the step, with every rank's excess (ms)."""
    if what == "start":
        lags = _start_lags(sp, sp.base_gaps())
        low = sorted(lags.values())[(len(lags) - 1) // 2] if lags else 0
        excess = {r: float(v - low) for r, v in lags.items()}
    else:
        _, excess = pace(_per_step(sp, what), sp.ranks, steps_of(sp))
    ms = {r: v / 1e6 for r, v in excess.items()}
    floor = max(LATE_MIN_MS, LATE_MIN_SHARE * step_ms)
    return sorted(r for r, v in ms.items() if v >= floor), ms


CAUSES = ("start", "idle", "work", "compute")  # what a late rank's excess can lie in (at_pace's ``what``)
# what a fixed rank changes: its steps' own time. A late first start lies before the profile (a warm-up
# step's tail): the job's step begins at the latest rank's measured start, and a replay that started that
# rank sooner would credit the time before the step as a saving (see _span_ms)
IN_STEP = ("idle", "work", "compute")


def ranks_at_pace(sp: Split, ranks, durations=None, gaps=None):
    """Durations and gaps with ``ranks`` at the pace of the median rank in every cause inside their steps
    (host idle, step-thread work and GPU compute; at_pace; IN_STEP): what ``whatif --fix-rank`` replays
    and what advise's late-rank finding saves. The other ranks keep every measured time of their own: their threads move
    only where the graph holds them (a sync on their GPU, a Gloo collective they wait in)."""
    g = sp.graph
    dur = g.dur_ns.copy() if durations is None else durations.copy()
    gap = sp.base_gaps() if gaps is None else gaps.copy()
    ranks = sorted(set(int(r) for r in ranks))
    if not ranks:
        return dur, gap
    for what in IN_STEP:
        dur, gap = at_pace(sp, what, ranks, durations=dur, gaps=gap)
    return dur, gap


def host_free(sp: Split, ranks, durations=None, gaps=None):
    """Durations and gaps with the host work of ``ranks`` free: every CPU thread's time between its nodes
    (its ops) and every runtime call (launches) of no duration; host idle, blocking waits and the GPU's
    work kept. What the step would be if the host issued its work at once: the bound of any change that
    makes the host faster (CUDA graphs, torch.compile, fewer launches), an upper bound of its saving. (The
    work just before a host idle interval is freed too: it was kept, the edge into an idle node left out.)"""
    return host_faster(sp, ranks, 0.0, durations, gaps)


def host_faster(sp: Split, ranks, factor: float, durations=None, gaps=None):
    """Durations and gaps with the host work of ``ranks`` taking ``factor`` of its measured time (0: free,
    host_free; 0.5: a host twice as fast): the CPU threads' time between their nodes (their ops) and the
    runtime calls (launches) scaled; host idle, blocking waits and the GPU's work kept. A launch keeps its
    op's latency: from the call's end where the op started after the call returned; where it started
    before, as long after the call's start as it did (never before the call's start)."""
    g = sp.graph
    dur = g.dur_ns.copy() if durations is None else durations.copy()
    gap = sp.base_gaps() if gaps is None else gaps.copy()
    mine = np.isin(g.rank, np.asarray(sorted(set(int(r) for r in ranks)), dtype=np.int64))
    cpu_edge = (g.edge_kind == "thread") & mine[g.dst] & (g.kind[g.dst] != "transfer")
    gap[cpu_edge] = np.where(gap[cpu_edge] > 0, np.rint(gap[cpu_edge] * factor), gap[cpu_edge]).astype(np.int64)
    call = mine & (g.kind == "call")
    dur[call] = np.rint(dur[call] * factor).astype(np.int64)
    # the op of a launch that started before its call returned (the gap, negative, is from the call's end)
    # keeps its offset from the call's start: the call is shorter by (1 - factor) of its duration
    launch = np.flatnonzero((g.edge_kind == "launch") & mine[g.dst])
    early = launch[gap[launch] < 0]
    d = g.dur_ns[g.src[early]]
    gap[early] = np.maximum(gap[early] + d - np.rint(d * factor).astype(np.int64),
                            -np.rint(d * factor).astype(np.int64))
    return dur, gap


def gpu_faster(sp: Split, ranks, factor: float, durations=None) -> np.ndarray:
    """Durations with the kernels and copies of ``ranks`` taking ``factor`` of their measured time (0: of no
    duration; 0.5: GPUs twice as fast at them); collectives' transfers and waits kept."""
    g = sp.graph
    dur = g.dur_ns.copy() if durations is None else durations.copy()
    mine = np.isin(g.kind, ("kernel", "memory")) & np.isin(g.rank, np.asarray(sorted(set(int(r) for r in ranks)),
                                                                              dtype=np.int64))
    dur[mine] = np.rint(dur[mine] * factor).astype(np.int64)
    return dur


def thread_bound_violations(sp: Split, rep, fixed=()) -> list[tuple[int, int, float, float]]:
    """The ranks (not in ``fixed``) whose step thread, in the counterfactual replay ``rep``, ends a step
    sooner than its own time allows: a thread that was never blocked keeps its measured pace, so its step
    can end no sooner than measured less the time it spent blocked (sync nodes, a Gloo wait's span). Each
    (rank, step, replayed end - start, the bound), ms; empty when the counterfactual respects the trace."""
    g = sp.graph
    main = sp.chain_main & (g.rank >= 0) & (g.step >= 0)
    # a blocking call: its call node (piece 0, the node id before) to its wait's end (piece 1, held by the GPU)
    blocked = np.zeros(len(g.node_id), dtype=np.int64)
    pos = {int(i): p for p, i in enumerate(g.node_id)}
    for p in np.flatnonzero(main & (g.kind == "sync")):
        c = pos.get(int(g.node_id[p]) - 1, p)
        blocked[p] = g.ts_ns[p] + g.dur_ns[p] - g.ts_ns[c]
    into = np.flatnonzero((g.edge_kind == "thread") & (g.kind[g.dst] == "wait"))
    blocked[g.dst[into]] += np.maximum(g.ts_ns[g.dst[into]] - (g.ts_ns[g.src[into]] + g.dur_ns[g.src[into]]
                                                               + g.gap_ns[into]), 0)
    fixed = set(int(r) for r in fixed)
    out = []
    for (r, st) in sorted({(int(a), int(b)) for a, b in zip(g.rank[main], g.step[main], strict=True)}):
        if r in fixed:
            continue
        m = np.flatnonzero(main & (g.rank == r) & (g.step == st))
        t0 = g.ts_ns[m].min()
        meas = (g.ts_ns[m] + g.dur_ns[m]).max() - t0
        new = (rep.start_ns[m] + (rep.end_ns[m] - rep.start_ns[m])).max() - rep.start_ns[m].min()
        bound = meas - blocked[m].sum()
        if new < bound - 1000:  # (a microsecond of rounding)
            out.append((r, st, new / 1e6, bound / 1e6))
    return out


def comm_changed(sp: Split, group: int | None, mode: str, factor: float = 1.0, durations=None):
    """Transfer durations of a group (None: every group): 'best' at the group's best bus bandwidth,
    'hidden' of no duration (overlapped), 'speedup' divided by factor."""
    g = sp.graph
    dur = g.dur_ns.copy() if durations is None else durations.copy()
    m = (sp.transfer_group >= 0) if group is None else (sp.transfer_group == group)
    if mode == "hidden":
        dur[m] = 0
    elif mode == "speedup":
        dur[m] = np.round(dur[m] / factor).astype(np.int64)
    elif mode == "best":
        bw = sp.busbw[m]
        best = np.nanmax(bw) if np.isfinite(bw).any() else np.nan
        if np.isfinite(best):
            f = np.where(np.isfinite(bw), bw / best, 1.0)
            dur[m] = np.round(dur[m] * f).astype(np.int64)
    return dur
