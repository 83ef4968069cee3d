import gzip
import json
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED_TRACES = pathlib.Path(os.environ.get("TRACEKIT_SHARED_TRACES", ROOT.parent / "shared" / "traces"))


IN_CI = os.environ.get("CI", "").lower() == "true"


def _missing() -> str:
    return f"real traces not found at {SHARED_TRACES} (../shared/traces beside the checkout)"


def _have_shared() -> bool:
    """The shared traces are there: the directory exists and holds something (an empty one is missing)."""
    return SHARED_TRACES.is_dir() and any(SHARED_TRACES.iterdir())


def require(available: bool, missing: str, in_ci: str) -> None:
    """Skip a test whose prerequisite is missing, except in CI, where it fails (``in_ci`` says why)."""
    if not available:
        if IN_CI:
            pytest.fail(f"{missing}: {in_ci}")
        pytest.skip(missing)


def shared_traces() -> pathlib.Path:
    """../shared/traces; a test that needs it skips without it, except in CI, where it fails."""
    require(_have_shared(), _missing(), "CI must have them")
    return SHARED_TRACES


def all_shared_files(*suffixes: str) -> list:
    """Every trace file under ../shared/traces (ending in one of ``suffixes``, default .json and
    .json.gz), as ``pytest.param``s with readable ids, for parametrize. Without the traces: one parameter,
    ``shared-traces-missing``, that skips naming where they were looked for (and fails in CI), so that the
    missing traces are reported rather than silently collected as no test."""
    if not _have_shared():
        return [pytest.param(None, marks=pytest.mark.shared_traces, id="shared-traces-missing")]
    files = sorted(p for p in SHARED_TRACES.rglob("*") if p.name.endswith(suffixes or (".json", ".json.gz")))
    return [pytest.param(p, id=f"{p.parent.name}/{p.name[:40]}") for p in files]


def pytest_configure(config):
    config.addinivalue_line("markers", "shared_traces: needs ../shared/traces (skips without, fails in CI)")


@pytest.fixture(autouse=True)
def _shared_traces_marker(request):
    if request.node.get_closest_marker("shared_traces"):
        shared_traces()


@pytest.fixture(autouse=True, scope="session")
def _temp_in_tmp(tmp_path_factory):
    """Tests never write outside their tmp dirs: what the tests and the processes they start put in the
    system's temporary directory (torchrun's torchelastic_* folders, the sql sandbox's private directory of
    a process a test kills, a subprocess's mkdtemp) goes to one of them."""
    import tempfile

    old = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(tmp_path_factory.mktemp("tmpdir"))
    tempfile.tempdir = None  # read TMPDIR again
    yield
    if old is None:
        del os.environ["TMPDIR"]
    else:
        os.environ["TMPDIR"] = old
    tempfile.tempdir = None


@pytest.fixture(autouse=True, scope="session")
def _cache_in_tmp(tmp_path_factory):
    """Tests never write outside their tmp dirs: tracekit's run cache goes to one of them."""
    old = os.environ.get("TRACEKIT_CACHE")
    os.environ["TRACEKIT_CACHE"] = str(tmp_path_factory.mktemp("tracekit-cache"))
    yield
    if old is None:
        del os.environ["TRACEKIT_CACHE"]
    else:
        os.environ["TRACEKIT_CACHE"] = old


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


def live(run):
    """The live version directory of a run (RUN/CURRENT names it): where its manifest and Parquet files are."""
    from tracekit.layout.versions import current_version

    return pathlib.Path(current_version(os.path.realpath(os.fspath(run))))
