"""Environment variables: each read in tracekit.settings; a value it cannot read is a one-line error naming
the variable and the value, never a traceback and never a silent default."""

import pytest

from tests.conftest import dist, write_trace
from tracekit import settings
from tracekit.cli.main import main
from tracekit.errors import TracekitError

NUMBERS = [  # variable, reader, value -> expected, default
    ("TRACEKIT_CACHE_MAX_MB", settings.cache_max_bytes, "12.5", 12.5e6, 4096e6),
    ("TRACEKIT_MAX_EVENT_MB", settings.max_event_bytes, "3", 3 * 1024 * 1024, 64 * 1024 * 1024),
    ("TRACEKIT_DERIVE_MEMORY_MB", settings.derive_memory_mb, "512", 512, 256),
]


@pytest.mark.parametrize("name,read,value,expected,default", NUMBERS, ids=[n[0] for n in NUMBERS])
def test_number_settings(monkeypatch, name, read, value, expected, default):
    monkeypatch.delenv(name, raising=False)
    assert read() == default
    monkeypatch.setenv(name, "")
    assert read() == default
    monkeypatch.setenv(name, value)
    assert read() == expected
    for bad in ("lots", "-5", "nan", "1e999" if name == "TRACEKIT_CACHE_MAX_MB" else "2.5"):
        monkeypatch.setenv(name, bad)
        with pytest.raises(TracekitError) as e:
            read()
        msg = str(e.value)
        assert f"{name}={bad!r}" in msg and "\n" not in msg


def test_derive_memory_below_its_floor_is_refused(monkeypatch):
    monkeypatch.setenv("TRACEKIT_DERIVE_MEMORY_MB", "32")
    with pytest.raises(TracekitError, match="TRACEKIT_DERIVE_MEMORY_MB='32'.*at least 64"):
        settings.derive_memory_mb()


@pytest.mark.parametrize("name,read", [("TRACEKIT_ZLIB", settings.use_zlib),
                                       ("TRACEKIT_PURE_PYTHON", settings.pure_python)])
def test_switch_settings(monkeypatch, name, read):
    monkeypatch.delenv(name, raising=False)
    assert read() is False
    for value, expected in (("1", True), ("yes", True), ("ON", True), ("0", False), ("false", False), ("", False)):
        monkeypatch.setenv(name, value)
        assert read() is expected, value
    monkeypatch.setenv(name, "maybe")
    with pytest.raises(TracekitError, match=f"{name}='maybe': not a switch"):
        read()


def test_debug_is_on_for_any_value_but_off(monkeypatch):
    # read while an error is being reported: it must not raise one of its own
    monkeypatch.setenv("TRACEKIT_DEBUG", "please")
    assert settings.debug() is True
    monkeypatch.setenv("TRACEKIT_DEBUG", "0")
    assert settings.debug() is False


def test_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "c"))
    assert settings.cache_dir() == str(tmp_path / "c")
    monkeypatch.setenv("TRACEKIT_CACHE", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert settings.cache_dir() == str(tmp_path / "home" / ".cache" / "tracekit")


@pytest.mark.parametrize("name", ["TRACEKIT_CACHE_MAX_MB", "TRACEKIT_MAX_EVENT_MB", "TRACEKIT_DERIVE_MEMORY_MB",
                                  "TRACEKIT_ZLIB", "TRACEKIT_PURE_PYTHON"])
def test_the_cli_says_which_setting_is_bad(monkeypatch, tmp_path, capsys, name):
    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(name, "x7")
    trace = write_trace(tmp_path / "rank0.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                                                   "ts": 1, "dur": 1}], header=dist(0, world=1))
    code = main(["report", str(trace), "summary"])
    err = capsys.readouterr().err.strip()
    assert code == 1 and f"{name}='x7'" in err and len(err.splitlines()) == 1, err
