"""An estimate: a figure with its interval, the one form a prediction takes from the network laws
(tracekit.analytic.netlaw) through the step's parts (tracekit.analytic.step) to whatif's table, where it
is written as three columns (``step_ms``, ``step_ms_lo``, ``step_ms_hi``).

Each operation does the arithmetic the code did by hand before, in the same order, so that the figures
stay the same to the last digit (benchmarks/whatif_before_after.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Estimate:
    value: float
    """the point estimate"""
    lo: float
    """the interval's low end (same unit)"""
    hi: float
    """the interval's high end (same unit)"""

    @classmethod
    def exact(cls, value: float) -> "Estimate":
        """A figure known exactly: its interval is the point."""
        return cls(value, value, value)

    def __add__(self, o: "Estimate") -> "Estimate":
        """Two parts of one whole: points and ends added (the ends' sum: both at their low, or high, at once)."""
        return Estimate(self.value + o.value, self.lo + o.lo, self.hi + o.hi)

    def scale(self, k: float) -> "Estimate":
        """Times ``k`` (a count, a share, a slowdown), ends included."""
        return Estimate(self.value * k, self.lo * k, self.hi * k)

    def over(self, d: float) -> "Estimate":
        """Divided by ``d`` (a change of unit: ns to ms is ``over(1e6)``)."""
        return Estimate(self.value / d, self.lo / d, self.hi / d)

    def widen(self, f: float) -> "Estimate":
        """The interval widened ``f`` times each way (the low end over ``f``, the high end times it)."""
        return Estimate(self.value, self.lo / f, self.hi * f)


ZERO = Estimate(0.0, 0.0, 0.0)


def columns(est: Estimate | None, name: str) -> dict:
    """The estimate as a table's three columns: ``name``, ``name``_lo, ``name``_hi (None without one)."""
    if est is None:
        return {name: None, f"{name}_lo": None, f"{name}_hi": None}
    return {name: est.value, f"{name}_lo": est.lo, f"{name}_hi": est.hi}
