"""A spill directory a killed process left is removed by the next one; nothing else is touched."""

import os
import pathlib
import subprocess
import sys

from tracekit.spill import STALE_S, spill_dir

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _plant(base: pathlib.Path, name: str, age_s: float) -> pathlib.Path:
    d = base / name
    d.mkdir()
    (d / "duckdb_temp_storage_DEFAULT-0.tmp").write_bytes(b"x" * 1000)
    t = os.path.getmtime(d) - age_s
    for p in (d / "duckdb_temp_storage_DEFAULT-0.tmp", d):
        os.utime(p, (t, t))
    return d


def test_only_a_dead_process_quiet_spill_of_the_same_kind_is_removed(tmp_path):
    dead = _dead_pid()
    old = STALE_S + 60
    gone = _plant(tmp_path, f"tracekit-spill-{dead}-aaaa", old)
    kept = [_plant(tmp_path, f"tracekit-spill-{dead}-bbbb", 0),  # written to just now
            _plant(tmp_path, f"tracekit-spill-{os.getpid()}-cccc", old),  # a live process (this one)
            _plant(tmp_path, "tracekit-spill-notapid", old),
            _plant(tmp_path, f"tracekit-sql-{dead}-dddd", old)]  # another kind
    (tmp_path / f"tracekit-spill-{dead}-file").write_text("a file, not a directory")

    path = spill_dir("tracekit-spill-", near=str(tmp_path))

    assert not gone.exists()
    assert all(d.exists() for d in kept)
    assert (tmp_path / f"tracekit-spill-{dead}-file").exists()
    assert os.path.basename(path).startswith(f"tracekit-spill-{os.getpid()}-")
    assert not os.path.exists(path)  # DuckDB makes it when it first spills


def test_a_report_sweeps_what_a_killed_one_left(tmp_path):
    """As a user meets it: a report killed while spilling left its directory in the temp dir; the next
    command (another process) removes it."""
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
    cmd = [sys.executable, "-m", "tracekit.cli.main"]
    subprocess.run(cmd + ["ingest", str(ROOT / "examples" / "traces" / "fsdp"), "-o", str(run)],
                   check=True, env=env, capture_output=True)
    left = _plant(tmp_path, f"tracekit-spill-{_dead_pid()}-eeee", STALE_S + 60)

    out = subprocess.run(cmd + ["report", str(run), "summary", "--format", "csv"], env=env,
                         capture_output=True, text=True)

    assert out.returncode == 0, out.stderr
    assert not left.exists()
