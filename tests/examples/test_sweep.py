"""examples/sweep.py --quick writes the paper's plots from real runs, with zero byte error."""

import json
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason="the sweep trains the examples")
pytest.importorskip("matplotlib", reason="the sweep draws plots (pip install .[plot])")
ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.slow  # trains and ingests a sweep of runs (minutes)
def test_quick_sweep_writes_plots(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "sweep.py"), "--out", str(tmp_path), "--quick"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in ("message_sizes", "volume_vs_seq", "volume_vs_hidden", "measured_vs_predicted"):
        png = tmp_path / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    results = json.loads((tmp_path / "results.json").read_text())
    assert len(results) == 8
    assert all(r["measured_bytes"] == r["predicted_bytes"] > 0 for r in results)
    by_seq = {r["seq"]: r["measured_bytes"] for r in results if r["scheme"] == "tp" and r["axis"] == "seq"}
    assert by_seq[32] == 2 * by_seq[16]  # TP traffic is activations: linear in sequence length
