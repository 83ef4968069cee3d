"""ISA-L's gunzip (python-isal, when installed) gives exactly zlib's bytes, and damage is reported the same way."""

import gzip
import os

import pyarrow.parquet as pq
import pytest

from tests.conftest import all_shared_files, require, write_trace
from tracekit.errors import TraceFormatError
from tracekit.ingestion import source
from tracekit.ingestion.one_file import ingest_file


@pytest.fixture(autouse=True)
def _needs_isal():
    require(source._igzip_threaded is not None, "python-isal is not installed",
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
    a = _ingest(path, tmp_path / "isal.parquet", zlib=False)["trace"]  # (one writer: one file each)
    b = _ingest(path, tmp_path / "zlib.parquet", zlib=True)["trace"]
    with gzip.open(path, "rb") as f:  # the JSON text as Python's own gzip reads it
        assert a["json_bytes"] == b["json_bytes"] == len(f.read())
    assert a == b
    assert pq.read_table(tmp_path / "isal.parquet").equals(pq.read_table(tmp_path / "zlib.parquet"))


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
