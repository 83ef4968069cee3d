"""Run a Python command and report its peak memory: its own peak RSS (VmHWM of this process's address
space) and the peak of the summed RSS of it and all its descendants (worker processes), sampled every
50 ms from /proc.

    python benchmarks/peak.py OUT.json -m module args...   |   python benchmarks/peak.py OUT.json -c CODE

ru_maxrss from wait4 is not used: on Linux it carries over the parent's peak across fork+exec.
"""

import json
import os
import runpy
import sys
import threading
import time


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
    except OSError:
        return 0.0


def _children(pid: int) -> list[int]:
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return kids


def _tree_rss_mb(root: int) -> float:
    """Summed RSS of root and every process below it."""
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += _rss_mb(pid)
        todo += _children(pid)
    return total


class TreeSampler(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.peak = 0.0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.wait(0.05):
            self.peak = max(self.peak, _tree_rss_mb(os.getpid()))


def vm_hwm_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    out, mode, target, *rest = sys.argv[1:]
    sys.argv = [target, *rest]
    start = time.perf_counter()
    sampler = TreeSampler()
    sampler.start()
    status = 0
    try:
        if mode == "-m":
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            exec(compile(target, "<bench>", "exec"), {"__name__": "__main__"})
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    seconds = time.perf_counter() - start
    sampler.stop.set()
    sampler.join()
    own = vm_hwm_mb()
    with open(out, "w") as f:
        json.dump({"seconds": seconds, "peak_rss_mb": own, "tree_peak_rss_mb": max(own, sampler.peak),
                   "status": status}, f)
    return status


if __name__ == "__main__":
    sys.exit(main())
