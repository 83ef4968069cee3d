"""examples/paper/study.py --quick: the study's conclusions, each against its own formula."""

import json
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("matplotlib", reason="the study draws figures (pip install .[plot])")
ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_study_conclusions_follow_the_formulas(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "paper" / "study.py"), "--out", str(tmp_path),
                           "--quick"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    r = json.loads((tmp_path / "study.json").read_text())
    c = r["conclusions"]
    # ZeRO-3: allgather twice + reduce-scatter, 3(n-1)/n of the parameters, against DP's allreduce 2(n-1)/n
    assert c["zero3_over_dp_traffic"] == pytest.approx(1.5, rel=2e-3)
    assert c["zero2_over_dp_traffic"] == pytest.approx(1.0, rel=2e-3)
    # activations: TP and PP traffic is linear in the sequence length, DP's is not (position table only)
    assert c["tp_traffic_seq_ratio_last_first"] == pytest.approx(c["seq_ratio_last_first"])
    assert c["pp_traffic_seq_ratio_last_first"] == pytest.approx(c["seq_ratio_last_first"])
    assert 1.0 <= c["dp_traffic_seq_ratio_last_first"] < 1.05
    # gpt3-1.3b: 24 layers, TP allreduces 4 per layer; a p2p message is micro-batch x seq x hidden x 2 bytes
    assert c["tp_messages_per_step"] == 24 * 4
    assert c["pp_p2p_message_bytes"] == 1 * 2048 * 2048 * 2
    assert r["traffic_by_scheme"]["ZeRO-3"] / r["traffic_by_scheme"]["DP"] == pytest.approx(1.5, rel=2e-3)
    for name in ("message_sizes", "traffic_by_scheme", "traffic_vs_seq", "traffic_vs_model"):
        assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"


def test_gpt3_presets_have_the_papers_sizes():
    from tracekit.analytic import PRESETS, GPTShape, total_params
    named = {"gpt3-125m": 125e6, "gpt3-350m": 350e6, "gpt3-760m": 760e6, "gpt3-1.3b": 1.3e9, "gpt3-2.7b": 2.7e9,
             "gpt3-6.7b": 6.7e9, "gpt3-13b": 13e9, "gpt3-175b": 175e9}  # Brown et al. 2020, table 2.1
    for name, n in named.items():
        assert total_params(GPTShape(**PRESETS[name])) == pytest.approx(n, rel=0.03), name
