"""The README's test command in a clone without ../shared/traces: tests that need them skip, named."""

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT


@pytest.mark.slow
def test_missing_shared_traces_skip_with_their_reason(tmp_path):
    empty = tmp_path / "no-traces"
    empty.mkdir()
    env = {**os.environ, "TRACEKIT_SHARED_TRACES": str(empty), "CI": "", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:warnings", "-p", "no:cacheprovider", "-rs",
                        "tests/unit/test_gzip.py::test_same_bytes_and_events_as_zlib"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(rf"SKIPPED \[1\] tests/unit/test_gzip.py:\d+: real traces not found at {re.escape(str(empty))}",
                     r.stdout), r.stdout
    assert "1 skipped" in r.stdout.splitlines()[-1]
