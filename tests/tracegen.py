"""Tiny builders for hand-made Kineto traces (times in microseconds, as traces write them)."""

_corr = [1000]


def kernel(name, ts, dur, stream=7, rank_pid=0, launch=None, **args):
    """A GPU kernel; with launch=(ts, tid) also returns its cudaLaunchKernel runtime event."""
    _corr[0] += 1
    c = _corr[0]
    k = {"ph": "X", "cat": "kernel", "name": name, "pid": rank_pid, "tid": stream, "ts": ts, "dur": dur,
         "args": {"stream": stream, "device": 0, "correlation": c, "External id": c, **args}}
    lts, ltid = launch if launch else (ts - 1 if ts >= 1 else 0, 1)
    rt = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": ltid, "ts": lts,
          "dur": 0.5, "args": {"correlation": c, "External id": c}}
    return [k, rt]


def cpu_op(name, ts, dur, tid=1, cat="cpu_op", **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 100, "tid": tid, "ts": ts, "dur": dur, "args": args}


def step(n, ts, dur, tid=1):
    return cpu_op(f"ProfilerStep#{n}", ts, dur, tid=tid, cat="user_annotation")
