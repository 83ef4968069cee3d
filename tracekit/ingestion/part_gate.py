"""When a rank part's process, started by the profiler's handler beside training, begins its work: once
the machine has a core to spare, or at the latest when the training process lets it go.

A part beside ranks that keep every core busy slows their steps at any priority (on 2 cores running 2
Gloo ranks, a part at nice 19 made the steps 45 % slower, one at SCHED_IDLE 40 %; README). So the part
waits, holding no memory to speak of, until the idle time of the cores it may run on (the rank's: a rank
pinned to some cores passes its pinning on) over two windows in a row (WINDOW_S each, /proc/stat) adds up
to a core (FREE_CORES), as where the ranks leave cores idle (a GPU host's ranks mostly wait for their
GPUs), where it starts at once; or until its standard input closes: the training process holds the other
end of that pipe and closes it in wait_for_parts (at its exit, or when the training script calls it), and
the operating system closes it if the process dies. Without /proc/stat (not Linux) it starts at once. A
container's CPU quota (cgroups) is not read: there the idle time is the host's.

The handler runs this file itself, as a script in an interpreter without site-packages (``python -S
part_gate.py CMD ...``: about 5 ms of CPU where the part's own interpreter and imports take 50), which
starts the part (exec: the same process, its pipe and its session) once the gate opens. Started beside the
training, the full interpreter cost each rank about 4 % of its step time over the steps after the profile
(2 Gloo ranks on 2 cores, steps of 6 ms; benchmarks/bench_stall.py). So this file imports nothing but the
standard library's os, select and sys.
"""

from __future__ import annotations

import os
import select
import sys

WINDOW_S = 0.5  # seconds of one look at the machine's idle time
FREE_CORES = 0.9  # the idle time, in cores, that lets the part start: a core, less the machine's own
# background work (a 2-core machine with one busy process read 0.96-1.02 idle cores; 2 Gloo ranks training
# on its 2 cores, 0.0-0.6)
WINDOWS = 2  # looks in a row with that much idle


def _cpu_times(stat: str = "/proc/stat", cpus=None) -> tuple[int, int, int] | None:
    """(idle, total, cores): the jiffies of the CPUs ``cpus`` (numbers; the process's own by default: a rank
    pinned to some cores leaves its part only those) summed, idle counting iowait, and how many CPUs those
    are; every CPU's (the first line) where /proc/stat lists none of them; None without /proc/stat."""
    try:
        with open(stat) as f:
            lines = [ln.split() for ln in f if ln.startswith("cpu")]
    except OSError:
        return None
    if cpus is None:
        cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else ()
    wanted = {f"cpu{c}" for c in cpus}
    rows = [fields for fields in lines if fields[0] in wanted]
    cores = len(rows)
    if not rows:  # no per-CPU lines for them: the machine's
        rows = [fields for fields in lines[:1] if fields[0] == "cpu"]
        cores = os.cpu_count() or 1
    if not rows:
        return None
    idle = total = 0
    for fields in rows:
        values = [int(v) for v in fields[1:9]]  # user nice system idle iowait irq softirq steal
        idle += values[3] + values[4]
        total += sum(values)
    return idle, total, cores


def idle_cores(before: tuple, after: tuple, cores: int) -> float:
    """The cores idle between two readings of _cpu_times, on average (0.0 when no time passed)."""
    total = after[1] - before[1]
    return 0.0 if total <= 0 else (after[0] - before[0]) / total * cores


def wait_for_a_free_core(fd: int = 0, window_s: float = WINDOW_S, stat: str = "/proc/stat", cpus=None) -> str:
    """Block until the CPUs this process may run on (``cpus``: its affinity by default) have FREE_CORES idle
    over WINDOWS windows in a row, or ``fd`` reaches its end (or fails). Returns why it returned: "free
    core", "released" or "no /proc/stat"."""
    before = _cpu_times(stat, cpus)
    if before is None:
        return "no /proc/stat"
    free = 0
    while True:
        try:
            ready, _, _ = select.select([fd], [], [], window_s)
            if ready and not os.read(fd, 4096):
                return "released"
        except (OSError, ValueError):  # not a pipe we can watch: its end, for this purpose
            return "released"
        after = _cpu_times(stat, cpus)
        if after is None:
            return "no /proc/stat"
        free = free + 1 if idle_cores(before, after, after[2]) >= FREE_CORES else 0
        if free >= WINDOWS:
            return "free core"
        before = after


def main(argv: list[str]) -> int:
    """``part_gate.py CMD ARG...``: wait for the gate on standard input (wait_for_a_free_core), then run CMD
    in this process (exec)."""
    if not argv:
        print("usage: python -S part_gate.py CMD [ARG...]", file=sys.stderr)
        return 2
    wait_for_a_free_core()
    try:
        os.execv(argv[0], argv)
    except OSError as exc:
        print(f"tracekit: the rank part was not started: {argv[0]}: {exc.strerror}", file=sys.stderr)
        return 1
    return 0  # (not reached: exec replaced this process)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
