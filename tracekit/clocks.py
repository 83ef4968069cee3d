"""Each host's clock offset (and drift) from the collectives that span hosts.

An NCCL collective ends within a few microseconds on every rank of its group: the last chunk reaches
everyone together. So the end times of one instance, read on each host's clock, differ by the hosts'
clock offsets plus a small jitter. Per instance, each host's end (the median of its ranks') is compared
with that of the instance's anchor (its lowest host); per (host, anchor) pair, the differences over all
the instances they share are fitted as a line in time (intercept: the offset at the job's middle; slope:
the drift, fitted over at least 0.1 s of instances) by least squares after dropping points past 3 robust
deviations (1.4826 x MAD) from the pair's median: a host that ran late on a few instances does not move
it. The pairs then give each host's offset by weighted least squares over the graph of hosts (weights
1 / standard error squared), the reference host (that of the lowest rank) held at 0; the uncertainty is
the solution's standard error. Hosts linked to the reference through no instance stay unaligned.
Linear in the observations (instances x hosts); the final solve is dense in hosts (512 hosts: 2 MB).
docs/definitions.md says why these choices.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .run_tables import rows_table

TABLE_DOC = ("clock_offsets: each host's clock against the reference host's (that of the lowest rank), estimated "
             "at ingest from the end times of the collective instances spanning hosts (tracekit.clocks; "
             "docs/definitions.md); the cross-rank facts use the aligned clocks. One row per host.")
# (column, Arrow type, meaning with unit): the clock_offsets table, one row per host
OFFSET_COLUMNS = [
    ("host", pa.string(), "host (traces.host; NULL: the ranks whose host is unknown)"),
    ("ranks", pa.int64(), "ranks on this host, count"),
    ("offset_ns", pa.int64(), ("added to this host's timestamps at ref_ns to put them on the reference host's "
                               "clock, ns")),
    ("drift_ppm", pa.float64(), ("clock rate difference: the correction grows by drift_ppm x 1e-6 ns per ns after "
                                 "ref_ns")),
    ("ref_ns", pa.int64(), ("raw time at which offset_ns holds: a timestamp ts becomes ts + offset_ns + "
                            "drift_ppm x 1e-6 x (ts - ref_ns), ns")),
    ("uncertainty_ns", pa.int64(), ("standard error of offset_ns (robust scatter of the instances' residuals "
                                    "/ sqrt(n)), ns")),
    ("instances", pa.int64(), "collective instances spanning this host and another that the estimate used, count"),
    ("status", pa.string(), ("reference, aligned, single host, no shared collective (with the reference host's "
                             "hosts), unknown host, or not aligned (--no-align)")),
]
OFFSETS_SCHEMA = pa.schema([pa.field(n, t) for n, t, _ in OFFSET_COLUMNS])
MIN_SPAN_FOR_DRIFT_NS = 100_000_000  # a drift is fitted only over at least 0.1 s of instances


# Ranks of one job start their collectives within seconds of each other, and hosts' clocks disagree by far
# less than a day. Past this, some of the traces count from another origin (their process's start, not
# the epoch): no wait or step across them can be measured (the sums of such waits overflowed int64 ns).
ONE_CLOCK_MAX_APART_NS = 86_400 * 10**9
FIRST_STARTS_SQL = """
SELECT c.rank, min(c.ts_ns) AS first_ns, any_value(t.path) AS path
FROM _collectives c JOIN traces t USING (rank) WHERE c.ts_ns IS NOT NULL GROUP BY c.rank ORDER BY first_ns, c.rank
"""


def check_one_clock(con) -> None:
    """Refuse ranks timed on clocks of different origins (a connection with traces and _collectives): the
    first collective of each rank, in time order; a gap of more than ONE_CLOCK_MAX_APART_NS between two
    ranks' names a file of each side."""
    from .errors import TracekitError

    rows = con.execute(FIRST_STARTS_SQL).fetchall()
    gaps = [(rows[i + 1][1] - rows[i][1], i) for i in range(len(rows) - 1)]
    if not gaps or max(gaps)[0] <= ONE_CLOCK_MAX_APART_NS:
        return
    i = max(gaps)[1]
    late, early = rows[i + 1], rows[0]
    apart_s = (late[1] - early[1]) / 1e9
    words = (f"{apart_s / (365.25 * 86400):.1f} years" if apart_s >= 365.25 * 86400 else f"{apart_s / 86400:.1f} days")
    raise TracekitError(f"{late[2]}: its collectives start {words} after those of {early[2]}: the traces are timed "
                        "on different clocks (one from its process's start, one from the epoch?), and no wait or "
                        "step across them can be measured; ingest the traces of each clock on their own")


# The ends that the estimate uses: clean instances (every rank there, same collective and size), per host
# the median of its ranks' ends, relative to the run's first end (doubles are exact below 2^53 ns). A
# matched send and receive end together too (the receive ends when the last byte lands, the send when it
# has left; NCCL's kernels then sync): they are what ties a pipeline's stages (on other hosts) together.
READS = ("collective_waits", "collective_instances")  # the cross-rank facts ENDS_SQL reads (with traces)
ENDS_SQL = """
WITH w AS (
    SELECT w.instance_key, t.host, w.end_ns
    FROM collective_waits w JOIN collective_instances i USING (instance_key) JOIN traces t USING (rank)
    WHERE i.status = 'clean' AND t.host IS NOT NULL),
spanning AS (SELECT instance_key FROM w GROUP BY instance_key HAVING count(DISTINCT host) > 1)
SELECT w.instance_key, w.host, quantile_disc(w.end_ns, 0.5) AS end_ns
FROM w JOIN spanning USING (instance_key) GROUP BY ALL
"""


def estimate(con, align: bool = True) -> pa.Table:
    """The clock_offsets table for the run on ``con`` (its traces, and collective_waits and
    collective_instances on raw clocks)."""
    hosts = con.execute("SELECT host, count(*), min(rank) FROM traces GROUP BY host ORDER BY min(rank)").fetchall()
    rows = {h: {"host": h, "ranks": n, "offset_ns": 0, "drift_ppm": 0.0, "ref_ns": 0, "uncertainty_ns": 0,
                "instances": 0, "status": "single host"} for h, n, _ in hosts}
    if None in rows:
        rows[None].update(status="unknown host", offset_ns=None, drift_ppm=None, uncertainty_ns=None)
    named = [h for h, _, _ in hosts if h is not None]
    if len(named) > 1:
        if not align:
            for h in named:
                rows[h].update(status="not aligned (--no-align)", offset_ns=None, drift_ppm=None, uncertainty_ns=None)
        else:
            _solve(con, named, rows)
    # numpy scalars to Python ones; rows_table, not from_pylist (which imports pandas into every ingest)
    return rows_table([{k: v.item() if hasattr(v, "item") else v for k, v in rows[h].items()} for h, _, _ in hosts],
                      OFFSETS_SCHEMA)


def _solve(con, named: list[str], rows: dict) -> None:
    inst, hix, names, ends = _fetch(con)
    ref_host = named[0]  # the host of the lowest rank
    for h in named:
        rows[h].update(status="no shared collective", offset_ns=None, drift_ppm=None, uncertainty_ns=None)
    rows[ref_host].update(status="reference", offset_ns=0, drift_ppm=0.0, uncertainty_ns=0)
    if not len(ends) or ref_host not in set(names.tolist()):
        return
    base = int(ends.min())
    e = (ends - base).astype(np.float64)
    order = np.lexsort((hix, inst))
    inst, hix, e = inst[order], hix[order], e[order]
    first = np.flatnonzero(np.r_[True, inst[1:] != inst[:-1]])  # each instance's lowest host: its anchor
    anchor, anchor_e = hix[first][inst], e[first][inst]
    ref_x = float(np.median(e))  # offsets are stated at this time (the middle of the instances' ends)
    sel = hix != anchor
    H = len(names)
    # each (host, anchor) pair: the anchor's end minus the host's, over the instances they share, as a line
    pair_key = hix[sel] * H + anchor[sel]
    pairs, p = np.unique(pair_key, return_inverse=True)
    x, y = e[sel] - ref_x, (anchor_e - e)[sel]
    P = len(pairs)
    hi, lo = np.full(P, -np.inf), np.full(P, np.inf)
    np.maximum.at(hi, p, x)
    np.minimum.at(lo, p, x)
    a, b, resid = _robust_lines(x, y, p, P, hi - lo >= MIN_SPAN_FOR_DRIFT_NS)
    n = np.bincount(p, minlength=P)
    se = np.maximum(1.2533 * 1.4826 * _group_median_by(np.abs(resid), p, P) / np.sqrt(n), 1.0)
    # offsets: o[h] - o[anchor] = a (the host's correction is what its anchor reads minus what it reads),
    # weighted least squares over the graph of pairs, the reference host held at 0 (its connected part only)
    ph, pa_ = pairs // H, pairs % H
    comp = _component(H, ph, pa_, int(np.searchsorted(names, ref_host)))
    idx = np.flatnonzero(comp)
    ref = int(np.searchsorted(names, ref_host))
    free = idx[idx != ref]
    if not len(free):
        return
    pos = np.full(H, -1)
    pos[free] = np.arange(len(free))
    w = 1 / se ** 2
    L = np.zeros((len(free), len(free)))
    rhs_o, rhs_d = np.zeros(len(free)), np.zeros(len(free))
    for k in np.flatnonzero(comp[ph]):
        i, j = pos[ph[k]], pos[pa_[k]]
        if i >= 0:
            L[i, i] += w[k]
            rhs_o[i] += w[k] * a[k]
            rhs_d[i] += w[k] * b[k]
        if j >= 0:
            L[j, j] += w[k]
            rhs_o[j] -= w[k] * a[k]
            rhs_d[j] -= w[k] * b[k]
        if i >= 0 and j >= 0:
            L[i, j] -= w[k]
            L[j, i] -= w[k]
    cov = np.linalg.inv(L)
    o, d = cov @ rhs_o, cov @ rhs_d
    used = np.bincount(np.concatenate([ph, pa_]), weights=np.concatenate([n, n]), minlength=H)
    rows[str(names[ref])].update(ref_ns=round(base + ref_x), instances=int(used[ref]))
    for k, h in enumerate(free):
        rows[str(names[h])].update(status="aligned", offset_ns=round(o[k]), drift_ppm=float(d[k] * 1e6),
                                   ref_ns=round(base + ref_x), uncertainty_ns=int(np.ceil(np.sqrt(cov[k, k]))),
                                   instances=int(used[h]))


def _component(H: int, a, b, start: int):
    """The hosts linked to ``start`` through the pairs (a[k], b[k])."""
    parent = list(range(H))

    def find(u):
        while parent[u] != u:
            parent[u] = parent[parent[u]]
            u = parent[u]
        return u

    for u, v in zip(a.tolist(), b.tolist(), strict=True):
        ru, rv = find(u), find(v)
        if ru != rv:
            parent[ru] = rv
    root = find(start)
    return np.array([find(h) == root for h in range(H)])


def _fetch(con):
    """(instance, host index, hosts, end_ns) of ENDS_SQL's rows: each instance and host numbered in the
    order of its text (as np.unique numbers them; DuckDB's, on integers: np.unique sorted 200k texts in
    0.25 s at 4,096 ranks), hosts[host index] its name. DuckDB's numpy arrays, not pyarrow's to_numpy: that
    imports pandas (0.9 s of a reduce's CPU) for the same arrays."""
    got = con.execute(f"SELECT dense_rank() OVER (ORDER BY instance_key) - 1 AS inst, "
                      f"dense_rank() OVER (ORDER BY host) - 1 AS hix, host, end_ns FROM ({ENDS_SQL})").fetchnumpy()
    hix = np.asarray(got["hix"]).astype(np.int64)
    names = np.empty(int(hix.max()) + 1 if len(hix) else 0, dtype=object)
    names[hix] = np.asarray(got["host"], dtype=object)
    return np.asarray(got["inst"]).astype(np.int64), hix, names, np.asarray(got["end_ns"]).astype(np.int64)


def _group_median(v, g):
    """Median of v per group g (0..G-1), the lower middle for an even count."""
    order = np.lexsort((v, g))
    counts = np.bincount(g)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    lo = v[order[starts + (counts - 1) // 2]]
    hi = v[order[starts + counts // 2]]
    return (lo + hi) / 2


def _group_median_by(v, g, G):
    out = np.zeros(G)
    present = np.bincount(g, minlength=G) > 0
    out[present] = _group_median(v, np.unique(g, return_inverse=True)[1])
    return out


def _robust_lines(x, y, g, G, fit_drift):
    """Per group, y = a + b x by least squares over the points within 3 robust deviations of the group's
    median (b = 0 where fit_drift is False)."""
    med = _group_median_by(y, g, G)
    dev = 1.4826 * _group_median_by(np.abs(y - med[g]), g, G)
    w = (np.abs(y - med[g]) <= 3 * np.maximum(dev[g], 1.0)).astype(np.float64)
    sw = np.bincount(g, w, G)
    sx, sy = np.bincount(g, w * x, G), np.bincount(g, w * y, G)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx, my = sx / sw, sy / sw
        sxx = np.bincount(g, w * (x - mx[g]) ** 2, G)
        sxy = np.bincount(g, w * (x - mx[g]) * (y - my[g]), G)
        b = np.where(fit_drift & (sxx > 0), sxy / sxx, 0.0)
    a = my - b * mx
    a = np.where(sw > 0, a, med)
    return a, b, y - (a[g] + b[g] * x)
