"""whatif --preset over a run that records its own model: the preset is the model predicted (the target),
as the model flags are, and the run's compute is rescaled from the model it trained. Expectations come from
the trace's recorded config (tracekit_config in the trace file, read here as JSON) and from the per-rank
work written out by hand from docs/model.md's formulas ("Compute"), never from tracekit.analytic."""

import gzip
import json
import pathlib
import re

import numpy as np
import pytest

import tracekit
from tracekit.analytic import PRESETS
from tracekit.cli.main import main
from tracekit.commands.whatif import whatif

ROOT = pathlib.Path(__file__).resolve().parents[2]
FSDP = ROOT / "examples" / "traces" / "fsdp"  # FSDP2 (zero 3) over 2 Gloo ranks, its model recorded


def _recorded() -> dict:
    """The model tracekit.profiler recorded in the run's rank 0 trace."""
    (f,) = FSDP.glob("*/rank0_trace.json.gz")
    return json.loads(gzip.decompress(f.read_bytes()))["tracekit_config"]["model"]


def _whatif_json(capsys, *flags) -> tuple[list[dict], str]:
    assert main(["whatif", str(FSDP), *flags, "--format", "json"]) == 0
    out = capsys.readouterr()
    return json.loads(out.out), out.err


def test_a_preset_is_the_target_as_the_model_flags_are(capsys):
    """The report: `--preset gpt3-175b` over this run gave compute 842 ms (the run calibrated as if it had
    trained the preset), the flags for a smaller model 5,000 ms. The example preset is the model the run
    recorded, so `--preset example` with flags over it asks for the same model as the flags alone: the
    same prediction, told as another model's (source_* columns, compute extrapolated)."""
    rec = _recorded()
    assert {"dtype": "float32", **PRESETS["example"]} == rec  # (float32: GPTShape's default dtype)
    flags = ["--hidden", "768", "--layers", "12", "--heads", "12"]
    by_flags, _ = _whatif_json(capsys, *flags)
    by_preset, err = _whatif_json(capsys, "--preset", "example", *flags)
    assert err.startswith("model: preset example with --layers 12, --hidden 768, --heads 12;")
    assert by_preset == by_flags
    step = by_preset[0]
    assert "source_step_ms" in step and "measured_step_ms" not in step
    assert "compute extrapolated: " in step["note"]
    # the preset alone is the run's own model: its own prediction, beside what was measured
    own, _ = _whatif_json(capsys)
    alone, _ = _whatif_json(capsys, "--preset", "example")
    assert alone == own and "measured_step_ms" in alone[0] and "compute extrapolated" not in alone[0]["note"]


def _work(m: dict, dp: int) -> tuple[float, float, float]:
    """One step's work on a rank of dp ZeRO-3 ranks, no tp or pp (docs/model.md, "Compute"): GEMM FLOPs
    2·tokens·12C² per layer plus the head's 2·tokens·C·V; attention FLOPs 4·b·T²·C per layer; elementwise
    elements tokens·C·12 per layer, the embeddings' tokens·C, the logits' tokens·V; backward twice forward;
    the optimizer's 3 touches of each of the rank's 1/dp of the parameters (per layer 12C² + 13C: two norms
    2C each, q/k/v 3C² + 3C, proj C² + C, fc 4C² + 4C, fc_out 4C² + C; token and position embeddings,
    the final norm, the head unless tied)."""
    L, C, V, T, b = m["layers"], m["hidden"], m["vocab"], m["seq"], m["micro_batch"]
    tokens = b * T
    gemm = 3 * (L * 2 * tokens * 12 * C * C + 2 * tokens * C * V)
    attention = 3 * L * 4 * b * T * T * C
    params = V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C + (0 if m.get("tied_head") else V * C)
    elementwise = 3 * (L * tokens * C * 12 + tokens * C + tokens * V) + 3 * params / dp
    return gemm, attention, elementwise


def test_a_presets_compute_is_the_runs_rates_times_the_presets_work(monkeypatch):
    """Presets of other sizes (2 layers, as the run: FSDP's own work per collective stays one figure):
    the step less its exposed communication (compute plus waiting, a share of compute) is, over the run's
    own model and every preset, one rate per kind of work times the work written out by hand, plus one
    constant (FSDP's own work): an exact linear fit, 4 unknowns over 7 models. Before, each preset was
    taken as the model the run trained, its compute near the run's own whatever its size. The note's
    'compute extrapolated: Nx' is the rated work's ratio to the run's own."""
    rec = _recorded()
    sizes = {"p-hidden": dict(hidden=128), "p-seq": dict(seq=64), "p-batch": dict(micro_batch=8),
             "p-vocab": dict(vocab=1024), "p-big": dict(hidden=256, heads=8, seq=128),
             "p-gpt2ish": dict(hidden=768, heads=12, vocab=50257, tied_head=True, fused_qkv=True)}
    for name, over in sizes.items():
        monkeypatch.setitem(PRESETS, name, {**rec, **over})
    run = tracekit.open(FSDP)
    models = [rec] + [{**rec, **over} for over in sizes.values()]
    steps = [whatif(run).to_pylist()[0]] + [whatif(run, preset=name).to_pylist()[0] for name in sizes]
    work = np.array([[*_work(m, dp=2), 1.0] for m in models])
    y = np.array([s["step_ms"] - s["exposed_ms"] for s in steps])
    coef, *_ = np.linalg.lstsq(work, y, rcond=None)
    assert (coef[:3] > 0).all()
    assert work @ coef == pytest.approx(y, rel=1e-9)
    own = work[0, :3] @ coef[:3]
    for row, s in zip(work[1:], steps[1:], strict=True):
        ratio = row[:3] @ coef[:3] / own
        said = re.search(r"compute extrapolated: (\S+)x", s["note"])
        if 1 / 1.5 <= ratio <= 1.5:  # (said only beyond 1.5x either way)
            assert said is None
        else:
            assert said is not None and said.group(1) == f"{ratio:.2g}"
