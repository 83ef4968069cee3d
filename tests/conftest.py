import gzip
import json
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED_TRACES = pathlib.Path(os.environ.get("TRACEKIT_SHARED_TRACES", ROOT.parent / "shared" / "traces"))


def shared_traces() -> pathlib.Path:
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"real traces not found at {SHARED_TRACES} (../shared/traces beside the checkout)")
    return SHARED_TRACES


def all_shared_files():
    if not SHARED_TRACES.is_dir():
        return []
    return sorted(p for p in SHARED_TRACES.rglob("*") if p.name.endswith((".json", ".json.gz")))


def write_trace(path, events, header=None, tail=None, compress=None, indent=None):
    """Write a Kineto-shaped trace: header keys, traceEvents, then tail keys (like baseTimeNanoseconds)."""
    doc = dict(header or {"schemaVersion": 1})
    doc["traceEvents"] = events
    doc.update(tail or {})
    text = json.dumps(doc, indent=indent).encode()
    path = pathlib.Path(path)
    if compress if compress is not None else path.name.endswith(".gz"):
        text = gzip.compress(text)
    path.write_bytes(text)
    return path


def dist(rank, world=2, backend="nccl", **kw):
    return {"schemaVersion": 1, "distributedInfo": {"backend": backend, "rank": rank, "world_size": world, **kw}}


@pytest.fixture
def tmp(tmp_path):
    return tmp_path
