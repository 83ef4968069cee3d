"""The run's dependency graph with its step threads split (what advise's counterfactuals and the critical
path of CPU ranks need).

The graph keeps, on a CPU thread, only the nodes the GPU or a collective depends on; the time between two
of them is one fixed gap. A counterfactual needs to know what that gap holds, so the step thread's gaps
are split here at the thread's idle intervals (no leaf op of its own for IDLE_MIN_NS or more,
``_advise_cpu_leaves.sql``):

- an idle interval during which one of the rank's Gloo collectives on another thread (a Gloo worker's)
  completes (its last rank arrives before
  the interval ends, or up to TOLERANCE_NS after: the recorded ends of Gloo ops lag; its transfer ends
  after the interval begins) is **waiting** for that collective up to its completion: a node of no duration,
  held by the transfer (a `held` edge; gap: the measured lag, negative when the op's recorded end comes
  later), so it moves with the transfer; where the thread resumes more than TOLERANCE_NS after the
  collective's recorded end, the rest of the interval is **host idle** (a sleep after the previous
  all_reduce ended is the host's, not a wait);
- only a Gloo collective holds an idle thread: an NCCL/RCCL transfer runs on a GPU stream and never blocks
  the thread that launched it, so on GPU ranks an idle interval is host idle whatever completes in it. A
  GPU rank's thread waits only where the trace shows it blocked: a synchronize call or a blocking copy (a
  `sync` node of the graph, held by the GPU op it waited for) or a c10d wait op;
- an idle interval in which the rank's autograd thread (``_autograd_threads.sql``) launches is **waiting
  for that thread** (backward() returns when it is done): a node at the interval's start hands it the work
  (it holds that thread's first launch in the interval), a node at that thread's last op's end in the
  interval releases the step thread, and what is left of the interval, neither thread running anything,
  is host idle; a faster host moves all of them. That thread's gaps within a step are split at its own
  idle intervals (host idle); the rest is its work (``work_edge``). (Before, the step thread's time inside
  a `## backward ##` range was its work, and the autograd thread's launches were held by nothing: a replay
  freed the first and kept the second where it was measured.);
- any other idle interval is **host idle** (asleep, data loading, code the profiler does not record): a
  node whose duration is the interval;
- the rest of the gap is the thread's **work** (its ops), kept as the edge's gap.

A Gloo op on a worker thread starts when the step thread enqueued it: it is held by the step thread's
last node before it (gap: the measured time), not by the worker's own idle time. Replayed with the
measured durations, the split graph gives back the measured times (tracekit.graph keeps each node's slack).

Each rank's first profiled step is held by an origin node at the job's first step start (the edge's
gap: how late the rank starts).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .. import sql_files as _sql
from .model import Graph

IDLE_MIN_NS = 50_000  # an idle interval this long or longer is a node; shorter ones stay in the work
TOLERANCE_NS = 5_000_000  # a collective's recorded end may come this long after the thread resumed
IDLE_BASE = -(1 << 50)  # node ids of the split's own nodes (graph hubs use small negative ids)
ASYNC_NS = 5_000_000  # an op's transfer may start this much after its thread's next op (clock jitter)


@dataclass(frozen=True, eq=False)
class Split:
    """The run's graph with its step threads split (see the module's docstring), and what each node is."""
    graph: Graph
    chain_main: np.ndarray   # bool per node: on its rank's step thread
    host_idle: np.ndarray    # bool per node: a host idle node
    work_edge: np.ndarray    # bool per edge: a host-thread edge whose gap is the thread's work (step, autograd)
    start_edge: np.ndarray   # bool per edge: the job's origin -> a rank's first step start (gap: its lag)
    transfer_group: np.ndarray  # per node: index into groups (-1: not a transfer, nor an unmatched comm kernel)
    busbw: np.ndarray        # per node: the transfer's instance bus bandwidth (nan: unknown)
    groups: list             # per group index: {group_label, collective, pg_name, pg_desc, group_size, ranks,
                             # unmatched: some of its kernels are in no matched instance}
    ranks: np.ndarray        # the ranks

    def replay(self, durations=None, gaps=None):
        return self.graph.replay(durations=durations, gaps=gaps)

    def base_gaps(self) -> np.ndarray:
        return self.graph.gap_ns + self.graph.slack_ns


def _col(t: pa.Table, name: str, dtype=None, fill=None):
    """A column as a numpy array (strings as objects, through lists: pyarrow's to_numpy of strings
    imports pandas, a second and a half)."""
    c = t.column(name)
    if fill is not None:
        c = c.fill_null(fill)
    if dtype is None:
        return np.array(c.to_pylist(), dtype=object)
    return np.asarray(c.combine_chunks().to_numpy(zero_copy_only=False), dtype=dtype)


def _gaps(ts: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The [start, end) gaps between sorted intervals (a union's holes)."""
    if len(ts) < 2:
        return np.zeros((0, 2), np.int64)
    b = np.maximum.accumulate(end)
    g = np.stack([b[:-1], ts[1:]], axis=1)
    return g[g[:, 1] > g[:, 0]]


def _union(iv: np.ndarray) -> np.ndarray:
    """Sorted, merged intervals."""
    if not len(iv):
        return iv
    iv = iv[np.argsort(iv[:, 0], kind="stable")]
    b = np.maximum.accumulate(iv[:, 1])
    new = np.ones(len(iv), dtype=bool)
    new[1:] = iv[1:, 0] > b[:-1]
    starts = iv[new, 0]
    ends = np.maximum.reduceat(b, np.flatnonzero(new))
    return np.stack([starts, ends], axis=1)


def _intersect(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The intersection of two sorted unions of intervals."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i, 0], b[j, 0]), min(a[i, 1], b[j, 1])
        if hi > lo:
            out.append((lo, hi))
        if a[i, 1] < b[j, 1]:
            i += 1
        else:
            j += 1
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def _idle_intervals(ops: pa.Table, inflight: dict, main: dict) -> dict[tuple, np.ndarray]:
    """Per (rank, chain), the [start, end) intervals of IDLE_MIN_NS or more in which the thread runs no op;
    on its step thread (``main``: rank -> chain), also where it runs no leaf op while one of its collectives
    is in flight (``inflight``: per rank, sorted windows)."""
    out = {}
    rank, chain = _col(ops, "rank", np.int64), _col(ops, "chain")
    ts, end = _col(ops, "ts_ns", np.int64), _col(ops, "end_ns", np.int64)
    leaf = _col(ops, "leaf", bool, False)
    for r, c in sorted({(int(a), str(b)) for a, b in zip(rank, chain, strict=True)}):
        m = (rank == r) & (chain == c)
        iv = _gaps(ts[m], end[m])
        if main.get(r) == c:
            lm = m & leaf
            inner = _intersect(_union(_gaps(ts[lm], end[lm])), inflight.get(r, np.zeros((0, 2), np.int64)))
            iv = _union(np.concatenate([iv, inner]))
        out[(r, c)] = iv[iv[:, 1] - iv[:, 0] >= IDLE_MIN_NS] if len(iv) else iv
    return out


def split(run) -> Split:
    """The run's dependency graph with its step threads split into work, host idle and waiting. An op
    whose instance's last rank arrived after the thread's next op started did not wait for it (an async
    send): by more than ASYNC_NS, else the clocks' jitter (a cycle the times leave, the Graph breaks)."""
    nodes = run.sql("SELECT node_id, rank, step, kind, name, cause, chain, ts_ns, dur_ns FROM graph_nodes")
    edges = run.sql("SELECT src, dst, kind, gap_ns FROM graph_edges")
    leaves = run.sql(_sql.load("reports", "_advise_cpu_leaves").text)
    transfers = run.sql(_sql.load("reports", "_advise_transfers").text)
    unmatched = run.sql(_sql.load("reports", "_advise_unmatched").text)

    nid = _col(nodes, "node_id", np.int64)
    rank = _col(nodes, "rank", np.int64, -1)
    step = _col(nodes, "step", np.int64, -1)
    kind, name, cause, chain = (_col(nodes, c) for c in ("kind", "name", "cause", "chain"))
    ts, dur = _col(nodes, "ts_ns", np.int64, 0), _col(nodes, "dur_ns", np.int64, 0)
    pos = {int(i): p for p, i in enumerate(nid)}
    src = np.array([pos.get(int(i), -1) for i in _col(edges, "src", np.int64)], dtype=np.int64)
    dst = np.array([pos.get(int(i), -1) for i in _col(edges, "dst", np.int64)], dtype=np.int64)
    ok = (src >= 0) & (dst >= 0)
    ekind, egap = _col(edges, "kind")[ok], _col(edges, "gap_ns", np.int64, 0)[ok]
    src, dst = src[ok], dst[ok]
    # the graph's own inferred edges between a step thread and a Gloo worker (enqueue; the transfer's end
    # -> the thread's next node) hold whole gaps: the split below puts finer ones in their place
    cross = (ekind == "thread") & (chain[src] != chain[dst])
    src, dst, ekind, egap = src[~cross], dst[~cross], ekind[~cross], egap[~cross]

    # an op that went on before its instance's last rank arrived (an async Gloo send, whose transfer node
    # starts after the thread's next node) did not wait for it: the hub does not hold it
    nxt = np.full(len(nid), np.iinfo(np.int64).max, dtype=np.int64)
    seq = (ekind == "thread") | (ekind == "stream")
    np.minimum.at(nxt, src[seq], ts[dst[seq]])
    async_t = (ekind == "collective") & (kind[dst] == "transfer") & (nxt[dst] < ts[dst] - ASYNC_NS)
    hub_of = {int(d): int(h) for h, d in zip(src[ekind == "collective"], dst[ekind == "collective"], strict=True)
              if kind[d] == "transfer"}
    is_async = np.zeros(len(nid), dtype=bool)
    is_async[dst[async_t]] = True
    src, dst, ekind, egap = src[~async_t], dst[~async_t], ekind[~async_t], egap[~async_t]

    main = {int(rank[i]): chain[i] for i in np.flatnonzero(kind == "step_start")}
    on_main = np.array([rank[i] >= 0 and main.get(int(rank[i])) == chain[i] for i in range(len(nid))], dtype=bool)


    # per rank: its transfers' ends and their arrivals (the arrive node is the transfer's id - 1)
    t_idx = np.flatnonzero(kind == "transfer")
    t_end = ts[t_idx] + dur[t_idx]
    t_arr = np.array([ts[pos[int(nid[i]) - 1]] if int(nid[i]) - 1 in pos else ts[i] for i in t_idx], dtype=np.int64)
    # a thread waits only where the trace shows it blocked: a Gloo collective (on a CPU worker thread, or
    # the thread's own async op) holds it while in flight; an NCCL/RCCL transfer runs on a GPU stream and
    # never blocks the thread that launched it (a synchronize call does, and is a sync node of its own)
    on_cpu = np.array([str(c).startswith("cpu/") for c in chain[t_idx]], dtype=bool)
    flying = on_cpu & (~on_main[t_idx] | is_async[t_idx])  # in flight while the step thread goes on
    inflight = {int(r): _union(np.stack([t_arr[flying & (rank[t_idx] == r)],
                                         np.maximum(t_end, ts[t_idx])[flying & (rank[t_idx] == r)]], axis=1))
                for r in np.unique(rank[t_idx])}
    idle = _idle_intervals(leaves, inflight, main)
    # per rank: the nodes of its other host threads (the autograd thread's launches and syncs; the rows of
    # _advise_cpu_leaves not on a step thread): a step thread idle while one of them runs waits for it
    # (backward() returns when the autograd thread is done)
    l_rank, l_chain = _col(leaves, "rank", np.int64), _col(leaves, "chain")
    l_ts, l_end = _col(leaves, "ts_ns", np.int64), _col(leaves, "end_ns", np.int64)
    helper_chains = {(int(r), str(c)) for r, c in zip(l_rank, l_chain, strict=True) if main.get(int(r)) != c}
    helper_ops = {key: (l_ts[m], l_end[m]) for key in helper_chains
                  for m in [(l_rank == key[0]) & (l_chain == key[1])]}
    helper = np.flatnonzero(~on_main & (rank >= 0) & np.isin(kind, ("call", "sync")))  # (launches: the few)
    helper = helper[np.array([(int(rank[i]), str(chain[i])) in helper_chains for i in helper], dtype=bool)]

    new_nodes = []  # (rank, step, kind, name, cause, ts, dur)
    new_edges = []  # (src, dst, kind, gap) with positions; new nodes at len(nid) + k
    helper_new = []  # positions of the new nodes on those threads (not on a step thread)
    drop = np.zeros(len(src), dtype=bool)
    released = np.zeros(len(src), dtype=bool)  # a helper thread's edges into the node the step thread hands work to

    def split_helper(prev, prev_end, hi, r, c, st):
        """A helper thread's time [prev_end, hi) after node ``prev``, cut at its idle intervals into host
        idle nodes: -> (the last node, its end)."""
        iv = idle.get((r, c))
        if iv is None or not len(iv) or hi - prev_end < IDLE_MIN_NS:
            return prev, prev_end
        a, b = np.maximum(iv[:, 0], prev_end), np.minimum(iv[:, 1], hi)
        for ja, jb in zip(a[b - a >= IDLE_MIN_NS], b[b - a >= IDLE_MIN_NS], strict=True):
            k = len(nid) + len(new_nodes)
            new_nodes.append((r, st, "idle", "host idle", "host idle", int(ja), int(jb - ja)))
            helper_new.append(k)
            new_edges.append((prev, k, "thread", int(ja - prev_end)))
            prev, prev_end = k, int(jb)
        return prev, prev_end
    for e in np.flatnonzero((ekind == "thread") & on_main[src] & on_main[dst]):
        s, d = src[e], dst[e]
        r = int(rank[s])
        lo, hi = ts[s] + dur[s], ts[d]
        iv = idle.get((r, str(main.get(r))))
        if iv is None or hi - lo < IDLE_MIN_NS or not len(iv) or kind[d] == "transfer" or kind[s] == "transfer":
            # (out of a transfer: a bound that the thread resumes after it, not the thread's own time)
            continue
        a, b = np.maximum(iv[:, 0], lo), np.minimum(iv[:, 1], hi)
        sel = b - a >= IDLE_MIN_NS
        if not sel.any():
            continue
        drop[e] = True
        prev, prev_end = s, lo
        # (the time after a step's end, before a node of no step, is in no step: a synchronize after the
        # last ProfilerStep ended would stretch that step's span on the path)
        st = int(step[d] if step[d] >= 0 else -1 if kind[s] == "step_end" else step[s])
        for ja, jb in zip(a[sel], b[sel], strict=True):
            # the rank's collectives whose last rank arrived before the thread resumed and whose transfer
            # ended after it went idle: it was waiting for one of them
            tol = min(TOLERANCE_NS, jb - ja)
            mine = (rank[t_idx] == r) & on_cpu & ~on_main[t_idx] & (ts[t_idx] <= jb + tol) & (t_end >= ja) \
                & (t_arr < jb)
            # an async op of this thread (a Gloo isend/irecv) completes when its last rank arrives
            mine_async = (rank[t_idx] == r) & on_cpu & is_async[t_idx] & (ts[t_idx] >= ja) & (ts[t_idx] <= jb) \
                & (t_arr < ja)
            k = len(nid) + len(new_nodes)
            if mine.any() or mine_async.any():
                if mine.any():
                    w = t_idx[mine][np.argmax(t_end[mine])]
                    done = int(ts[w] + dur[w])  # the op's recorded end
                    held = w
                else:
                    w = t_idx[mine_async][np.argmax(ts[t_idx][mine_async])]
                    done = int(ts[w])  # its last rank's arrival
                    held = hub_of[int(w)]
                # the thread waits until the collective completes (its recorded end lags by up to
                # TOLERANCE_NS); what the interval holds after that is the host's own idle (a sleep after
                # the previous step's all_reduce ended is not waiting for it)
                until = int(jb) if jb - done <= TOLERANCE_NS else max(done, int(ja))
                new_nodes.append((r, st, "wait", "waiting for " + str(name[w]), None, until, 0))
                new_edges.append((held, k, "held", until - done))
                new_edges.append((prev, k, "thread", int(ja - prev_end)))
                prev, prev_end = k, until
                if until < jb:
                    new_nodes.append((r, st, "idle", "host idle", "host idle", until, int(jb - until)))
                    new_edges.append((k, k + 1, "thread", 0))
                    prev, prev_end = k + 1, int(jb)
            elif (inside := helper[(rank[helper] == r) & (ts[helper] >= ja) & (ts[helper] + dur[helper] <= jb)]).size:
                # the autograd thread works while this one runs nothing: this one waits for it. It starts when
                # this one hands it the work (backward() called): a node at the interval's start (what came
                # before it is this thread's work, so the hand-off moves with it) holds that thread's first
                # launch in the interval, not its own idling since its previous one (a step earlier)
                w = inside[np.argmax(ts[inside] + dur[inside])]
                done = int(ts[w] + dur[w])
                mine_t = inside[chain[inside] == chain[w]]
                first = int(mine_t[np.argmin(ts[mine_t])])
                c = str(chain[w])
                tid = c.rsplit("/", 1)[-1]
                hand = k
                new_nodes.append((r, st, "wait", "hands work to host thread " + tid, None, int(ja), 0))
                new_edges.append((prev, hand, "thread", int(ja - prev_end)))
                new_edges.append((hand, first, "handoff", int(ts[first]) - int(ja)))
                released[(ekind == "thread") & (dst == first)] = True
                # that thread goes on after its last launch (its last ops in the interval): its work and idle
                # up to its last op's end, a node of its own there, which the resume waits for
                h_ts, h_end = helper_ops.get((r, c), (np.zeros(0, np.int64), np.zeros(0, np.int64)))
                in_iv = (h_ts >= ja) & (h_ts < jb)
                last = min(int(h_end[in_iv].max()), int(jb)) if in_iv.any() else done
                held_by = int(w)
                if last > done:
                    hp, hp_end = split_helper(int(w), done, last, r, c, st)
                    held_by = len(nid) + len(new_nodes)
                    new_nodes.append((r, st, "wait", f"host thread {tid}'s last op ends", None, last, 0))
                    helper_new.append(held_by)
                    new_edges.append((hp, held_by, "thread", last - hp_end))
                    done = last
                # the step thread resumes once that thread is done; what is left of the interval, neither
                # thread running anything, is host idle (unrecorded code; before, a fixed lag that no
                # counterfactual could shorten: 10 ms of it on a fresh user's attack)
                k = len(nid) + len(new_nodes)
                until = min(done, int(jb))
                new_nodes.append((r, st, "wait", "waiting for host thread " + tid, None, until, 0))
                new_edges.append((hand, k, "thread", 0))
                new_edges.append((held_by, k, "joined", until - done))
                prev, prev_end = k, until
                if until < jb:
                    new_nodes.append((r, st, "idle", "host idle", "host idle", until, int(jb) - until))
                    new_edges.append((k, k + 1, "thread", 0))
                    prev, prev_end = k + 1, int(jb)
            else:
                new_nodes.append((r, st, "idle", "host idle", "host idle", int(ja), int(jb - ja)))
                new_edges.append((prev, k, "thread", int(ja - prev_end)))
                prev, prev_end = k, int(jb)
        new_edges.append((prev, d, "thread", int(hi - prev_end)))

    # the other host threads' gaps within a step, split the same way at their own idle intervals (host idle;
    # the rest is their work), but for the edge into the node the step thread hands work to (that thread
    # waited for it) and an edge from one step to the next (what the thread did between its backwards is not
    # known: split, a step's backward ran before its forward in the idle-free replay)
    is_helper = np.zeros(len(nid), dtype=bool)
    is_helper[helper] = True
    for e in np.flatnonzero((ekind == "thread") & is_helper[src] & is_helper[dst] & ~released
                            & (chain[src] == chain[dst]) & (step[src] == step[dst])):
        s_, d = src[e], dst[e]
        n_before = len(new_nodes)
        last, last_end = split_helper(s_, int(ts[s_] + dur[s_]), int(ts[d]), int(rank[s_]), str(chain[s_]),
                                      int(step[d]))
        if len(new_nodes) > n_before:
            drop[e] = True
            new_edges.append((last, d, "thread", int(ts[d]) - last_end))

    # each rank's first step starts after the job's first: an origin node holds them, the lag its gap
    firsts = {}
    for i in np.flatnonzero(kind == "step_start"):
        if int(rank[i]) not in firsts or ts[i] < ts[firsts[int(rank[i])]]:
            firsts[int(rank[i])] = i
    if firsts:
        origin = min(int(ts[i]) for i in firsts.values())
        k = len(nid) + len(new_nodes)
        new_nodes.append((-1, -1, "origin", "the job's first step start", None, origin, 0))
        new_edges.extend((k, int(i), "start", int(ts[i]) - origin) for i in firsts.values())

    # Gloo ops on a worker thread: held by the step thread's last node before them, not the worker's idling
    n_all = len(nid) + len(new_nodes)
    all_rank = np.concatenate([rank, np.array([n[0] for n in new_nodes], dtype=np.int64)])
    all_ts = np.concatenate([ts, np.array([n[5] for n in new_nodes], dtype=np.int64)])
    all_dur = np.concatenate([dur, np.array([n[6] for n in new_nodes], dtype=np.int64)])
    all_main = np.concatenate([on_main, np.ones(len(new_nodes), dtype=bool)])
    all_main[helper_new] = False
    worker = np.flatnonzero(np.isin(kind, ("arrive", "gloo")) & ~on_main & (rank >= 0)
                            & np.array([str(c).startswith("cpu/") for c in chain], dtype=bool))
    if len(worker):
        for r in np.unique(rank[worker]):
            m = np.flatnonzero(all_main & (all_rank == r))
            ends = all_ts[m] + all_dur[m]
            order = np.argsort(ends, kind="stable")
            m, ends = m[order], ends[order]
            for w in worker[rank[worker] == r]:
                j = np.searchsorted(ends, ts[w], side="right") - 1
                if j >= 0:
                    new_edges.append((int(m[j]), int(w), "enqueue", int(ts[w] - ends[j])))
        # a worker's own gaps are its idling between ops: what it waits for is the step thread's enqueue
        into_worker = (ekind == "thread") & np.isin(dst, np.flatnonzero(
            ~on_main & (rank >= 0) & np.array([str(c).startswith("cpu/") for c in chain], dtype=bool)))
        egap = np.where(into_worker, 0, egap)

    egap = np.where(released, 0, egap)
    keep = ~drop
    n_new = len(new_nodes)
    # the new nodes' ids in an order of their own (rank, time, kind, name), not the order they were made in,
    # which follows the rows' order in the run's files: a replay breaks ties by id, and a critical path
    # through tied ranks changed with the run's layout (a folder per rank against packed events)
    canon = sorted(range(n_new), key=lambda i: (new_nodes[i][0], new_nodes[i][5], new_nodes[i][2],
                                                str(new_nodes[i][3]), new_nodes[i][6], new_nodes[i][1]))
    new_ids = np.empty(n_new, dtype=np.int64)
    new_ids[np.asarray(canon, dtype=np.int64)] = IDLE_BASE - np.arange(n_new, dtype=np.int64)
    ids = np.concatenate([nid, new_ids])
    ne = np.array([(a, b) for a, b, _, _ in new_edges], dtype=np.int64).reshape(-1, 2)
    all_src = np.concatenate([src[keep], ne[:, 0]])
    all_dst = np.concatenate([dst[keep], ne[:, 1]])
    all_kind = np.concatenate([ekind[keep], np.array([k for _, _, k, _ in new_edges], dtype=object)])
    all_gap = np.concatenate([egap[keep], np.array([g for _, _, _, g in new_edges], dtype=np.int64)])
    g = Graph(node_id=ids, rank=all_rank,
              step=np.concatenate([step, np.array([n[1] for n in new_nodes], dtype=np.int64)]),
              kind=np.concatenate([kind, np.array([n[2] for n in new_nodes], dtype=object)]),
              name=np.concatenate([name, np.array([n[3] for n in new_nodes], dtype=object)]),
              cause=np.concatenate([np.where(cause == None, "", cause),  # noqa: E711 (object array)
                                    np.array([n[4] or "" for n in new_nodes], dtype=object)]),
              ts_ns=all_ts, dur_ns=all_dur, src=all_src, dst=all_dst, edge_kind=all_kind, gap_ns=all_gap)
    # the graph's own edges (it drops those a cycle of contradicting clocks leaves backward)
    work = (g.edge_kind == "thread") & all_main[g.src] & all_main[g.dst] & (g.kind[g.dst] != "transfer")
    # and the work of the rank's other host threads (the autograd thread's time between its launches: a late
    # rank's slower backward lies there, not on the step thread, which waits for it)
    on_helper = np.concatenate([is_helper, np.zeros(n_new, dtype=bool)])
    on_helper[helper_new] = True
    work |= (g.edge_kind == "thread") & on_helper[g.src] & on_helper[g.dst] & (g.step[g.src] == g.step[g.dst])
    host = np.zeros(n_all, dtype=bool)
    host[len(nid):] = np.array([n[2] == "idle" for n in new_nodes], dtype=bool)

    # transfers: their group and bus bandwidth
    tgroup = np.full(n_all, -1, dtype=np.int64)
    busbw = np.full(n_all, np.nan)
    groups, gidx = [], {}
    # (a collective kernel no matched instance holds: its time is the transfer and the waiting for ranks the
    # run lacks; its group is marked 'unmatched', and hiding it bounds a saving from above)
    for row, matched in [(r, True) for r in transfers.to_pylist()] + [(r, False) for r in unmatched.to_pylist()]:
        p = pos.get(int(row["node_id"]))
        if p is None:
            continue
        key = (row["group_label"], row["collective"])
        if key not in gidx:
            gidx[key] = len(groups)
            groups.append({"group_label": row["group_label"], "collective": row["collective"],
                           "pg_name": row["pg_name"], "pg_desc": row["pg_desc"], "group_size": row["group_size"],
                           "ranks": set(), "unmatched": False})
        groups[gidx[key]]["ranks"].add(row["rank"])
        groups[gidx[key]]["unmatched"] |= not matched
        tgroup[p] = gidx[key]
        if matched and row["transfer_busbw_gbps"]:
            busbw[p] = row["transfer_busbw_gbps"]
    return Split(graph=g, chain_main=all_main, host_idle=host, work_edge=work, start_edge=g.edge_kind == "start",
                 transfer_group=tgroup,
                 busbw=busbw, groups=groups, ranks=np.unique(rank[rank >= 0]))
