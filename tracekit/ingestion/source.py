"""Open a trace file as a stream of JSON bytes: gzip told by its magic number (ISA-L when installed),
SHA-256 on the fly."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import queue
import threading
import time
import zlib

from .. import settings
from ..errors import TraceFormatError

# A file whose inode changed (content, mode, owner, name) less than this before it was read may change
# again within the same timestamp tick (coarse on some file systems) without its stat showing it.
RACY_NS = 2_000_000_000


def file_stat(st: os.stat_result, read_at_ns: int) -> dict | None:
    """What tells, without reading the file again, that it is the one read at ``read_at_ns``: its size,
    inode, mtime and ctime (which no one can set back). None when it changed too shortly before."""
    if st.st_ctime_ns > read_at_ns - RACY_NS:
        return None
    return {"bytes": st.st_size, "inode": st.st_ino, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns}


def stat_now(path: str) -> dict | None:
    return file_stat(os.stat(path), time.time_ns())


def same_stat(recorded: dict | None, path: str) -> bool:
    """True when ``path``'s stat is the one ``file_stat`` recorded (so its content is too)."""
    if not recorded:
        return False
    st = os.stat(path)
    return recorded == {"bytes": st.st_size, "inode": st.st_ino, "mtime_ns": st.st_mtime_ns,
                        "ctime_ns": st.st_ctime_ns}


class _Hashing:
    """A file wrapper that feeds every byte read into a SHA-256 and counts them. The hashing runs on a
    thread of its own (hashlib releases the GIL), beside the decoding: on one file it costs no wall time."""

    def __init__(self, raw):
        self.raw = raw
        self.sha = hashlib.sha256()
        self.count = 0
        self._q: queue.Queue = queue.Queue(maxsize=2)
        self._t: threading.Thread | None = None  # started by the first read, stopped by close()

    def _hash(self):
        while (data := self._q.get()) is not None:
            self.sha.update(data)

    def _put(self, data):
        if self._t is None:
            self._t = threading.Thread(target=self._hash, daemon=True, name="tracekit-sha256")
            self._t.start()
        self._q.put(data)

    def read(self, n=-1):
        data = self.raw.read(n)
        if data:
            self._put(data)
        self.count += len(data)
        return data

    def readinto(self, buf):
        n = self.raw.readinto(buf)
        if n:
            self._put(bytes(memoryview(buf)[:n]))  # a copy: the caller reuses buf
        self.count += n or 0
        return n

    def hexdigest(self) -> str:
        self._stop()
        return self.sha.hexdigest()

    def _stop(self):
        if self._t is not None and self._t.is_alive():
            self._q.put(None)
            self._t.join()

    def close(self):
        self._stop()
        self.raw.close()


class TraceSource:
    """Reads a trace's JSON text in chunks; ``read()`` returns b'' at the end.

    Errors of the container (a truncated or corrupt gzip) become TraceFormatError naming the file and
    how many JSON bytes came out before the damage.
    """

    def __init__(self, path: str):
        self.path = path
        try:
            read_at = time.time_ns()
            self._hashing = _Hashing(open(path, "rb"))
            st = os.fstat(self._hashing.raw.fileno())
            self.file_bytes = st.st_size
            self.stat = file_stat(st, read_at)
        except OSError as exc:
            raise TraceFormatError(f"{path}: cannot read it ({exc.strerror}); check that it exists and that "
                                   "you may read it") from None
        head = self._hashing.raw.peek(2)[:2] if hasattr(self._hashing.raw, "peek") else b""
        self.compressed = head == b"\x1f\x8b"
        self._stream = None  # opened by the first read: a reader thread (ISA-L) starts only when needed
        self.json_bytes = 0
        self._closed = False

    def read(self, n: int) -> bytes:
        if self._stream is None:
            self._stream = gunzip(self._hashing) if self.compressed else self._hashing
        try:
            data = self._stream.read(n)
        except EOFError:
            raise TraceFormatError(
                f"{self.path}: the gzip stream is truncated at byte {self.file_bytes:,} (the file ends before "
                "its compressed stream does: it was cut off while being written or copied). Re-copy the file."
            ) from None
        except (gzip.BadGzipFile, zlib.error, OSError, *_ISAL_ERRORS) as exc:
            raise TraceFormatError(
                f"{self.path}: the gzip data is corrupt after {self.json_bytes:,} bytes of JSON ({exc}). "
                "Re-copy the file."
            ) from None
        self.json_bytes += len(data)
        return data

    def finish(self) -> str:
        """Read what is left of the raw file (gzip trailer) and return its SHA-256."""
        if self._stream is not None and self._stream is not self._hashing:
            self._stream.close()  # a threaded decompressor stops reading the file first
        while self._hashing.read(1 << 20):
            pass
        digest = self._hashing.hexdigest()
        self._hashing.close()
        self._closed = True
        return digest

    def close(self):
        if self._closed:
            return
        self._closed = True
        if self._stream is not None and self._stream is not self._hashing:
            try:
                self._stream.close()
            except Exception:  # noqa: BLE001 - closing after a decode error: the error is already reported
                pass
        self._hashing.close()


try:  # ISA-L's igzip (python-isal): the same bytes as zlib, about twice as fast
    from isal import igzip as _igzip
    from isal import igzip_lib as _igzip_lib
    _ISAL_ERRORS: tuple = (_igzip_lib.IsalError,)
except ImportError:
    _igzip = None
    _ISAL_ERRORS = ()

_END = object()


class _GunzipThread(io.RawIOBase):
    """ISA-L's gunzip on a thread of its own, handing blocks of JSON to the reader through a small queue
    (the decompression overlaps the parsing).

    Not ``isal.igzip_threaded``: its thread stops as soon as the thread that opened the file is gone (or
    looks gone, as it can in a forked pool worker), and its reader takes a stopped thread for the end of
    the data, so a trace comes out short or empty without an error (tests/unit/test_gzip.py shows it).
    Here the end is a marker that the thread puts after the last block, an error reaches the reader as
    itself, and a thread that stops with neither is an error too."""

    def __init__(self, fileobj, block: int = 1 << 20):
        self._file = _igzip.IGzipFile(fileobj=fileobj, mode="rb")
        self._q: queue.Queue = queue.Queue(maxsize=2)
        self._stopping = threading.Event()
        self._buf = memoryview(b"")
        self._ended = False
        self._t = threading.Thread(target=self._run, args=(block,), daemon=True, name="tracekit-gunzip")
        self._t.start()

    def _run(self, block: int) -> None:
        try:
            while data := self._file.read(block):
                if not self._put(data):
                    return
            self._put(_END)
        except BaseException as exc:  # noqa: BLE001 - raised again in the reader's thread
            self._put(exc)

    def _put(self, item) -> bool:
        while not self._stopping.is_set():
            try:
                self._q.put(item, timeout=0.05)
                return True
            except queue.Full:
                pass
        return False

    def _next(self):
        while True:
            try:
                return self._q.get(timeout=0.5)
            except queue.Empty:
                if not self._t.is_alive() and self._q.empty():
                    raise OSError("the gzip decompression stopped before the end of the data") from None

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if not self._buf:
            if self._ended:
                return 0
            item = self._next()
            if item is _END or isinstance(item, BaseException):
                self._ended = True
                if item is _END:
                    return 0
                raise item
            self._buf = memoryview(item)
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n

    def close(self) -> None:
        if self.closed:
            return
        self._stopping.set()
        while self._t.is_alive():  # a thread waiting to hand over a block sees the stop within 50 ms
            try:
                self._q.get(timeout=0.05)
            except queue.Empty:
                pass
        self._t.join()
        self._file.close()
        super().close()


def gunzip(fileobj):
    """A reader of the gzip data in ``fileobj``: ISA-L, decompressing on a thread of its own, when
    python-isal is installed (a dependency: every install has it where its wheel exists) and TRACEKIT_ZLIB
    is not set; Python's zlib otherwise."""
    if _igzip is not None and not settings.use_zlib():
        return io.BufferedReader(_GunzipThread(fileobj), buffer_size=1 << 20)
    return gzip.GzipFile(fileobj=fileobj, mode="rb")
