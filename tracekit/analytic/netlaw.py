"""A network law: a collective's transfer time = alpha + bus traffic / beta, with an interval.

Fitted per collective, group size and link kind from every measured clean instance (its fastest rank's
duration: no waiting). The fit goes through each message size's typical time (least squares weighted by
the instances at that size, alpha >= 0): the median over the profiled steps of the step's mean time at
that size. A step pays for every instance, its slow ones too, so the tail a size has in every step counts
(on 2 shared cores a Gloo collective's times at one size vary up to 35x, and the median instance left a
third of tp-sp's transfer out); a burst of load in one step does not (the median over steps, as the step
a prediction is checked against is the median one). Instances without a step count as steps of their own
(the median instance). The interval is the spread of the instances around the line (10th to 90th
percentile of measured / fitted). Over one or two profiled steps, the mean of their instances: the steps
paid each of them, and a burst cannot be told from a tail every step has (the model's compute keeps those
steps' bursts alike; the median instance put the shipped one-step examples' own steps at 0.81: moe,
tp-compile; issue 38); with no step at all, the median instance. Outside the measured sizes
the interval widens with the distance (in factors of two) to the nearest measured size. From one size
alpha and beta cannot be told apart: the prediction spans all-latency to all-bandwidth and its point is
their geometric mean. Where nothing was measured, the link's datasheet figure and NCCL's latency are
the prior (tracekit.analytic.links), labelled as such.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from .estimate import ZERO, Estimate
from .links import NCCL_LATENCY_US, NVLINK_EFFICIENCY

WIDEN_PER_OCTAVE = 0.25  # extrapolated: the interval widens by this share per factor 2 beyond the range


@dataclass(frozen=True)
class Law:
    alpha_ns: float
    """latency per collective, ns"""
    ns_per_byte: float
    """1 / bus bandwidth, ns per byte of bus traffic (0: no size effect measured)"""
    min_bytes: float
    """smallest measured message, bytes"""
    max_bytes: float
    """largest measured message, bytes"""
    sizes: int
    """distinct message sizes measured"""
    points: int
    """instances measured"""
    spread: Estimate = Estimate(1.0, 1.0, 1.0)
    """measured / fitted: 1 at the line, from its 10th to its 90th percentile"""
    kind: str = "fit"
    """fit, one size (alpha and beta not separable), constant (no size effect), or prior (datasheet)"""
    one_size_ns: float = 0.0
    """one size: the typical transfer at that size (_typical), ns"""
    one_size_traffic: float = 0.0
    """one size: its bus traffic, bytes"""

    @property
    def bus_gbps(self) -> float | None:
        return 1.0 / self.ns_per_byte if self.ns_per_byte > 0 else None

    def label(self) -> str:
        if self.kind == "prior":
            return (f"prior, not measured: NCCL latency {NCCL_LATENCY_US[0]:.0f}-{NCCL_LATENCY_US[2]:.0f} us, "
                    f"{self.bus_gbps:.0f} GB/s bus bandwidth from the link's datasheet figure")
        if self.kind == "one size":
            return ("one message size measured: latency and bandwidth not separable, the interval spans "
                    "all-latency to all-bandwidth")
        if self.kind == "constant":
            return "no size effect measured (times do not grow with size): a constant time per collective"
        return f"alpha + bytes/beta through the typical times of {self.sizes} message sizes"


MIN_STEPS = 3  # the median over steps sets a burst in one step aside only from three steps on


def _typical(v: list[tuple[float, float, object]]) -> float:
    """One size's typical time: per step, the mean of its instances; the median over steps (an instance
    without a step is a step of its own). Over fewer than MIN_STEPS steps, the mean of the instances in
    steps (the steps paid each); with none in a step, the median instance."""
    steps: dict[object, list] = {}
    for i, (_, t, st) in enumerate(v):
        steps.setdefault(("step", st) if st is not None else ("alone", i), []).append(t)
    stepped = [t for k, ts in steps.items() if k[0] == "step" for t in ts]
    if len(steps) - sum(1 for k in steps if k[0] == "alone") < MIN_STEPS:
        # one or two profiled steps: their instances' mean (the step paid each of them, as its compute
        # paid its own bursts: a burst and a tail every step are not told apart); none: the median instance
        return statistics.fmean(stepped) if stepped else statistics.median(t for _, t, _ in v)
    return statistics.median(statistics.fmean(ts) for ts in steps.values())


def fit_law(points: list[tuple]) -> Law | None:
    """``points``: (bus traffic bytes, transfer ns, message bytes[, step]) per measured instance."""
    pts = [(p[0], p[1], p[2], p[3] if len(p) > 3 else None) for p in points if p[0] > 0 and p[1] > 0]
    if not pts:
        return None
    by: dict[float, list] = {}
    for x, t, b, st in pts:
        by.setdefault(b, []).append((x, t, st))
    med = [(statistics.median(x for x, _, _ in v), _typical(v), len(v)) for v in by.values()]
    lo_b, hi_b = min(by), max(by)
    if len(med) == 1:
        x0, t0, n = med[0]
        return Law(0.0, t0 / x0, lo_b, hi_b, 1, n, kind="one size", one_size_ns=t0, one_size_traffic=x0,
                   **_spread(pts, lambda x: t0 * x / x0))
    w = [n for *_, n in med]
    sw = sum(w)
    mx = sum(wi * x for (x, _, _), wi in zip(med, w, strict=True)) / sw
    mt = sum(wi * t for (_, t, _), wi in zip(med, w, strict=True)) / sw
    sxx = sum(wi * (x - mx) ** 2 for (x, _, _), wi in zip(med, w, strict=True))
    sxt = sum(wi * (x - mx) * (t - mt) for (x, t, _), wi in zip(med, w, strict=True))
    slope = sxt / sxx if sxx > 0 else 0.0
    alpha = mt - slope * mx
    kind = "fit"
    if slope <= 0:  # noise beats the size effect
        slope, alpha, kind = 0.0, mt, "constant"
    elif alpha < 0:  # through the origin: bandwidth only
        slope = sum(wi * x * t for (x, t, _), wi in zip(med, w, strict=True)) / sum(
            wi * x * x for (x, _, _), wi in zip(med, w, strict=True))
        alpha = 0.0
    return Law(alpha, slope, lo_b, hi_b, len(med), len(pts), kind=kind,
               **_spread(pts, lambda x: alpha + slope * x))


def _spread(pts, f) -> dict:
    ratios = sorted(t / f(x) for x, t, *_ in pts if f(x) > 0)
    if len(ratios) < 3:
        return {"spread": Estimate(1.0, min(ratios + [1.0]), max(ratios + [1.0]))}
    q = statistics.quantiles(ratios, n=10, method="inclusive")
    return {"spread": Estimate(1.0, min(q[0], 1.0), max(q[-1], 1.0))}


def prior_law(link_gbps: float) -> Law:
    """The law a datasheet gives: NCCL's typical latency and the link's typical bus bandwidth, the
    interval from the low latency and high efficiency to the high latency and low efficiency."""
    lat_lo, lat, lat_hi = (u * 1e3 for u in NCCL_LATENCY_US)
    eff_lo, eff = NVLINK_EFFICIENCY
    nspb = 1.0 / (link_gbps * eff)
    spread = Estimate(1.0, min(lat_lo / lat, eff), max(lat_hi / lat, eff / eff_lo))
    return Law(lat, nspb, 0.0, math.inf, 0, 0, spread=spread, kind="prior")


def predict(law: Law, count: float, msg_bytes: float, traffic: float) -> tuple[Estimate, list[str]]:
    """Transfer time, ns, of ``count`` collectives of ``msg_bytes`` each with ``traffic`` bus bytes in all,
    with its interval, and notes."""
    notes = []
    if count <= 0:
        return ZERO, notes
    per = traffic / count
    if law.kind == "one size":
        bw_only = law.one_size_ns * per / law.one_size_traffic
        ends = (bw_only, law.one_size_ns)  # alpha = 0, alpha = the whole measured time
        t, lo, hi = math.sqrt(ends[0] * ends[1]), min(ends), max(ends)
        one = Estimate(t, lo * law.spread.lo, hi * law.spread.hi)
    else:
        t = law.alpha_ns + per * law.ns_per_byte
        one = law.spread.scale(t)  # the line's point, and its spread around it
    if law.kind != "prior" and law.min_bytes > 0 and not law.min_bytes <= msg_bytes <= law.max_bytes:
        edge = law.min_bytes if msg_bytes < law.min_bytes else law.max_bytes
        octaves = abs(math.log2(msg_bytes / edge)) if msg_bytes > 0 else 0.0
        widen = 1 + WIDEN_PER_OCTAVE * octaves
        one = one.widen(widen)
        side = "below" if msg_bytes < law.min_bytes else "above"
        notes.append(f"extrapolated {octaves:.1f} factors of 2 {side} the measured message sizes")
    return one.scale(count), notes
