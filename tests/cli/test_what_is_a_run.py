"""One rule for "is this a run": a manifest that tracekit wrote, never a file name alone; refusals leave
nothing behind (issue 20, items 4 and 13)."""

import json
import os
import subprocess

import pytest

from tests.conftest import dist, live, write_trace
from tracekit.cli.main import main


@pytest.fixture
def trace(tmp_path):
    return write_trace(tmp_path / "rank0.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                                                   "ts": 1, "dur": 1}], header=dist(0, world=1))


def _tree(d):
    return {os.path.relpath(os.path.join(r, f), d): open(os.path.join(r, f), "rb").read()
            for r, _, fs in os.walk(d) for f in fs}


@pytest.mark.parametrize("manifest", [{"name": "my app", "icons": []}, {"schema_version": 1}, [1, 2]])
def test_a_directory_with_someone_elses_manifest_is_not_replaced(tmp_path, trace, capsys, manifest):
    w = tmp_path / "w"
    (w / "src").mkdir(parents=True)
    (w / "src" / "app.js").write_text("console.log('mine')\n")
    (w / "manifest.json").write_text(json.dumps(manifest))
    (w / "events").mkdir()  # even beside an events directory
    before = _tree(w)
    assert main(["ingest", str(trace), "-o", str(w)]) == 1
    err = capsys.readouterr().err
    assert err == (f"error: {w}: exists, is not empty and is not a tracekit run (no manifest that tracekit "
                   "wrote); a run replaces its directory, so choose another -o (or remove that directory "
                   "yourself)\n")
    assert _tree(w) == before
    assert sorted(os.listdir(tmp_path)) == ["rank0.json", "w"]  # no lock file left by the refusal


def test_a_tracekit_run_is_replaced_and_carries_its_marker(tmp_path, trace):
    run = tmp_path / "run"
    assert main(["ingest", str(trace), "-o", str(run)]) == 0
    doc = json.loads((live(run) / "manifest.json").read_text())
    assert doc["format"] == "tracekit run" and isinstance(doc["schema_version"], int)
    assert main(["ingest", str(trace), "-o", str(run), "--force"]) == 0


def test_reading_a_foreign_manifest_is_one_line(tmp_path, capsys):
    from tracekit.errors import RunError
    from tracekit.store import Run
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "manifest.json").write_text('{"schema_version": 1, "name": "app"}')
    with pytest.raises(RunError, match="not a tracekit run"):
        Run(str(tmp_path / "w"))


def test_the_root_is_refused_without_a_lock_file(trace, capsys):
    assert main(["ingest", str(trace), "-o", "/"]) == 1
    assert capsys.readouterr().err == "error: /: a run cannot be the root directory; choose another -o\n"
    assert not os.path.exists("/..lock")


def test_inputs_inside_the_output_are_refused_without_a_lock_file(tmp_path, trace, capsys):
    assert main(["ingest", str(trace), "-o", str(tmp_path)]) == 1
    assert "choose another -o" in capsys.readouterr().err
    assert not [p for p in os.listdir(tmp_path.parent) if p.endswith(".lock") and tmp_path.name in p]


def test_a_read_only_file_system_is_one_line(tmp_path, trace, capsys):
    """Needs root to mount (skipped elsewhere)."""
    ro = tmp_path / "ro"
    ro.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a read-only tmpfs here")
    try:
        assert main(["ingest", str(trace), "-o", str(ro / "run")]) == 1
        err = capsys.readouterr().err
        assert err == (f"error: cannot write the run {ro / 'run'}: Read-only file system ({ro / 'run'}); "
                       "nothing was written. Choose an -o on a writable file system\n")
    finally:
        subprocess.run(["umount", str(ro)], check=False)
