"""ISA-L's gunzip (python-isal, when installed) gives exactly zlib's bytes, and damage is reported the same way."""

import gzip
import os

import pytest

from tests.conftest import all_shared_files, require, write_trace
from tracekit.errors import TraceFormatError
from tracekit.ingestion import source
from tracekit.ingestion.one_file import ingest_file, read_parts


@pytest.fixture(autouse=True)
def _needs_isal():
    require(source._igzip is not None, "python-isal is not installed",
            "it is a dependency of tracekit (pyproject.toml)")


def _ingest(path, out, zlib: bool):
    old = os.environ.pop("TRACEKIT_ZLIB", None)
    if zlib:
        os.environ["TRACEKIT_ZLIB"] = "1"
    try:
        return ingest_file(str(path), str(out), rank=0)
    finally:
        os.environ.pop("TRACEKIT_ZLIB", None)
        if old is not None:
            os.environ["TRACEKIT_ZLIB"] = old


@pytest.mark.parametrize("path", all_shared_files(".gz"))
def test_same_bytes_and_events_as_zlib(path, tmp_path):
    ra = _ingest(path, tmp_path / "isal.parquet", zlib=False)  # (one writer each)
    rb = _ingest(path, tmp_path / "zlib.parquet", zlib=True)
    a, b = ra.trace, rb.trace
    with gzip.open(path, "rb") as f:  # the JSON text as Python's own gzip reads it
        assert a["json_bytes"] == b["json_bytes"] == len(f.read())
    assert a == b
    assert read_parts(ra.parts).equals(read_parts(rb.parts))


@pytest.mark.parametrize("cut", [0.5, 0.999])
def test_damage_named_the_same_way(tmp_path, cut):
    p = write_trace(tmp_path / "t.json.gz", [{"ph": "X", "name": f"op{i}", "ts": i} for i in range(50_000)])
    data = p.read_bytes()
    p.write_bytes(data[:int(len(data) * cut)])
    bad = tmp_path / "flip.json.gz"
    bad.write_bytes(data[:len(data) // 3] + bytes(b ^ 0xFF for b in data[len(data) // 3:len(data) // 3 + 64])
                    + data[len(data) // 3 + 64:])
    for damaged, words in ((p, "gzip stream is truncated at byte"), (bad, "gzip data is corrupt")):
        for zlib in (False, True):
            with pytest.raises(TraceFormatError) as info:
                _ingest(damaged, tmp_path / "x.parquet", zlib)
            assert str(damaged) in str(info.value) and words in str(info.value), (zlib, str(info.value))


def test_the_whole_stream_whichever_thread_opened_it(tmp_path):
    """isal.igzip_threaded's reader stops when the thread that opened the file ends, and its reader takes
    that for the end of the data: a short stream and no error (seen in CI as an empty trace in a pool
    worker; isal 1.9.1 returns 1 MB of this test's 11). tracekit's reader gives every byte to whichever thread reads."""
    import threading

    text = b"".join(b'{"ph": "X", "name": "op%d", "ts": %d},' % (i, i) for i in range(300_000))  # 11 MB
    p = tmp_path / "t.gz"
    p.write_bytes(gzip.compress(text, 1))

    def read_after_the_opener_ended(opener):
        box = {}
        t = threading.Thread(target=lambda: box.update(f=opener(open(p, "rb"))))
        t.start()
        t.join()
        with box["f"] as f:
            return f.read()

    assert read_after_the_opener_ended(source.gunzip) == text


def test_an_error_in_the_decompressing_thread_reaches_the_reader(tmp_path):
    class Failing:  # a file whose read fails after its first block: a disk error mid-file
        def __init__(self, data):
            self.data, self.calls = data, 0

        def read(self, n=-1):
            self.calls += 1
            if self.calls > 1:
                raise OSError(5, "Input/output error")
            return self.data[:n]

        def readinto(self, b):
            data = self.read(len(b))
            b[:len(data)] = data
            return len(data)

    data = gzip.compress(os.urandom(1 << 21), 1)
    with source.gunzip(Failing(data)) as f, pytest.raises(OSError, match="Input/output error"):
        f.read()
