"""Pipeline schedules simulated: GPipe, 1F1B and interleaved 1F1B, as a small event simulation.

Each stage runs its list of forward (F) and backward (B) passes in its schedule's order, one at a time.
A pass starts when its stage is free and its input is there: F of micro-batch m on (virtual) stage v after
F(m) on v - 1 and one point-to-point transfer; B(m) on v after B(m) on v + 1 and a transfer (the last
virtual stage: after its own F(m)). The makespan and each stage's idle time (the bubble) are results of
the simulation, not of a formula; on unit times they match the textbook ones ((S - 1) (F + B) of bubble
per stage for GPipe and 1F1B), which the tests check by hand.

A transfer costs either a lag (``p2p``: the input arrives that long after its pass ended, no stage held)
or, where the run measured its pipeline's transfers (issue 38), each stage's own cost per point-to-point
op (``xfer``): the sending stage is held that long after the pass whose output it sends (the input
arrives when the send ends), the receiving stage that long once the input is there (a blocking send and
receive on the ranks' timelines: the exposed transfer of each op).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import TracekitError

SCHEDULES = ("gpipe", "1f1b", "interleaved")  # every schedule the model knows: the CLI's choices, validation's


def model_chunks(schedule: str, chunks: int) -> int:
    """Model chunks (virtual stages) per stage that ``schedule`` runs: ``chunks`` with interleaving, else one."""
    return chunks if schedule == "interleaved" else 1


@dataclass(frozen=True)
class Pipeline:
    makespan: float
    """from the first pass's start to the last pass's end, over all stages"""
    busy: tuple[float, ...]
    """per stage, time spent in passes"""
    end: tuple[float, ...]
    """per stage, when its last pass ends"""

    @property
    def bubble(self) -> tuple[float, ...]:
        """per stage, idle time within the makespan"""
        return tuple(self.makespan - b for b in self.busy)


def _order(schedule: str, stages: int, mbs: int, chunks: int, s: int) -> list[tuple[str, int, int]]:
    """Stage s's passes in order: (F or B, micro-batch, chunk); chunk c of stage s is virtual stage
    c * stages + s."""
    if schedule == "gpipe":
        return [("F", m, 0) for m in range(mbs)] + [("B", m, 0) for m in range(mbs)]
    if schedule == "1f1b":
        warm = min(stages - s - 1, mbs)
        out = [("F", m, 0) for m in range(warm)]
        for i in range(mbs - warm):
            out += [("F", warm + i, 0), ("B", i, 0)]
        return out + [("B", m, 0) for m in range(mbs - warm, mbs)]
    # interleaved (Megatron): passes in groups of `stages` micro-batches, cycling over the chunks
    total = mbs * chunks

    def f(k):
        return ("F", (k // (stages * chunks)) * stages + k % stages, (k // stages) % chunks)

    def b(k):
        return ("B", (k // (stages * chunks)) * stages + k % stages, chunks - 1 - (k // stages) % chunks)
    warm = min((stages - s - 1) * 2 + (chunks - 1) * stages, total)
    out = [f(k) for k in range(warm)]
    for i in range(total - warm):
        out += [f(warm + i), b(i)]
    return out + [b(k) for k in range(total - warm, total)]


def simulate(fwd: list[float], bwd: list[float], mbs: int, *, schedule: str = "1f1b", chunks: int = 1,
             p2p: float = 0.0, xfer: list[float] | None = None) -> Pipeline:
    """Simulate one step of ``len(fwd)`` stages over ``mbs`` micro-batches. ``fwd[s]``/``bwd[s]``: stage
    s's forward/backward time per micro-batch (split evenly over its ``chunks`` with interleaving);
    ``p2p``: one transfer between neighbouring stages, a lag; ``xfer[s]``: what each point-to-point op
    (a send, a receive) holds stage s (none if not given). ``busy`` counts passes only."""
    stages = len(fwd)
    xfer = list(xfer) if xfer is not None else [0.0] * stages
    if len(xfer) != stages:
        raise TracekitError(f"a pipeline needs one transfer cost per stage ({stages}), not {len(xfer)}")
    if schedule not in SCHEDULES:
        raise TracekitError(f"pipeline schedule must be one of {', '.join(SCHEDULES)}, not {schedule!r}")
    if len(bwd) != stages or stages < 1 or mbs < 1:
        raise TracekitError(f"a pipeline needs a forward and a backward time per stage ({stages} and {len(bwd)}) "
                            f"and at least one micro-batch ({mbs})")
    chunks = model_chunks(schedule, chunks)
    if schedule == "interleaved" and mbs % stages:
        raise TracekitError(f"interleaved 1F1B needs micro-batches ({mbs}) divisible by the stages ({stages})")
    last = stages * chunks - 1
    orders = [_order(schedule, stages, mbs, chunks, s) for s in range(stages)]
    done: dict[tuple[str, int, int], float] = {}  # (F/B, micro-batch, virtual stage) -> end time
    pos, free, busy = [0] * stages, [0.0] * stages, [0.0] * stages
    left = sum(len(o) for o in orders)
    while left:
        moved = False
        for s in range(stages):
            while pos[s] < len(orders[s]):
                kind, m, c = orders[s][pos[s]]
                v = c * stages + s
                if kind == "F":
                    dep, remote = (("F", m, v - 1), True) if v > 0 else (None, False)
                else:
                    dep, remote = (("B", m, v + 1), True) if v < last else (("F", m, v), False)
                if dep is not None and dep not in done:
                    break
                if remote:  # received: once it is there (a lag after it was sent), then the receive's own cost
                    start = max(free[s], done[dep] + p2p) + xfer[s]
                else:
                    start = max(free[s], done[dep] if dep else 0.0)
                dur = (fwd[s] if kind == "F" else bwd[s]) / chunks
                free[s] = start + dur
                if (v < last if kind == "F" else v > 0):  # its output goes to another stage: sent
                    free[s] += xfer[s]
                done[(kind, m, v)] = free[s]
                busy[s] += dur
                pos[s] += 1
                left -= 1
                moved = True
        if not moved:  # cannot happen with the orders above; a guard against a wrong order
            raise TracekitError(f"pipeline schedule {schedule} deadlocks with {stages} stages and {mbs} micro-batches")
    makespan = max(free)
    return Pipeline(makespan, tuple(busy), tuple(free))
