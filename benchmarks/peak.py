"""Run a Python command and report its own peak RSS (VmHWM of this process's address space).

    python benchmarks/peak.py OUT.json -m module args...   |   python benchmarks/peak.py OUT.json -c CODE

ru_maxrss from wait4 is not used: on Linux it carries over the parent's peak across fork+exec.
"""

import json
import runpy
import sys
import time


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
    status = 0
    try:
        if mode == "-m":
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            exec(compile(target, "<bench>", "exec"), {"__name__": "__main__"})
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    with open(out, "w") as f:
        json.dump({"seconds": time.perf_counter() - start, "peak_rss_mb": vm_hwm_mb(), "status": status}, f)
    return status


if __name__ == "__main__":
    sys.exit(main())
