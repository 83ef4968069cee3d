"""A rich progress bar for ingest (files, MB, events/s), fed by workers through a queue.

Silent unless stdout is a terminal (or ``show=True``): logs and pipes get no escape codes.
"""

from __future__ import annotations

import multiprocessing
import os
import queue as _queue
import signal
import sys
import time

_QUEUE = None  # set in each worker by worker_init


def worker_init(q) -> None:
    global _QUEUE
    _QUEUE = q
    if multiprocessing.parent_process() is not None:  # a pool worker, not the main process (jobs=1)
        die_with_parent()


def make_sink():
    """A callback(json_bytes, events) for ingest_file that batches updates into the queue."""
    q = _QUEUE
    if q is None:
        return None
    state = {"b": 0, "e": 0, "t": time.monotonic()}

    def sink(nbytes: int, nevents: int) -> None:
        state["b"] += nbytes
        state["e"] += nevents
        now = time.monotonic()
        if now - state["t"] > 0.1 or nevents == 0:
            q.put((state["b"], state["e"]))
            state.update(b=0, e=0, t=now)

    return sink


class IngestProgress:
    def __init__(self, files: int, total_bytes: int, show: bool | None):
        self.show = sys.stdout.isatty() if show is None else show
        self.queue = multiprocessing.get_context().Queue() if self.show else None
        self.files, self.total = files, total_bytes
        self.events = 0
        self._progress = None
        self._start = time.monotonic()

    def __enter__(self):
        if self.show:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("[bold]ingest"), BarColumn(),
                TextColumn("{task.fields[files]}"), TextColumn("{task.fields[mb]}"),
                TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task("ingest", total=self.total, files="", mb="", rate="")
            self._done_files = 0
            self._json = 0
            self._update()
        return self

    def _update(self):
        el = max(time.monotonic() - self._start, 1e-6)
        self._progress.update(self._task, files=f"{self._done_files}/{self.files} files",
                              mb=f"{self._json / 1e6:,.0f} MB JSON", rate=f"{self.events / el:,.0f} events/s")

    def poll(self) -> None:
        if not self.show:
            return
        while True:
            try:
                b, e = self.queue.get_nowait()
            except _queue.Empty:
                break
            self._json += b
            self.events += e
        self._update()

    def file_done(self, file_bytes: int) -> None:
        if self.show:
            self._done_files += 1
            self._progress.advance(self._task, file_bytes)
            self.poll()

    def __exit__(self, *exc):
        if self._progress is not None:
            self.poll()
            self._progress.stop()
        return False


def die_with_parent() -> None:
    """In a pool worker: the kernel kills it when the process that started it dies (kill -9 included),
    instead of leaving it parsing for minutes. Linux only; elsewhere a no-op."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent died before prctl took effect
            os._exit(1)
    except OSError:
        pass
