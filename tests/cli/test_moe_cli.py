"""tracekit model and whatif with expert parallelism (--ep, --experts, --top-k). Expected values are worked
by hand from the shapes (B x T x top_k routed rows of C floats per all-to-all) or read from the raw
traces of examples/traces/moe."""

import gzip
import json
import pathlib

from tracekit.cli.main import main

ROOT = pathlib.Path(__file__).resolve().parents[2]
MOE = ROOT / "examples" / "traces" / "moe"
LAYERS, B, T, C, E = 2, 4, 32, 64, 4  # the example preset, and the MoE example's shape


def routed(k):
    return B * T * k * C * 4  # one all-to-all's rows on one rank, bytes


def test_model_predicts_the_all_to_alls_per_layer(capsys):
    assert main(["model", "--preset", "example", "--micro-batches", "1", "--experts", "4", "--top-k", "2",
                 "--dp", "2", "--ep", "2", "--backend", "gloo", "--format", "json"]) == 0
    rows = [(r["group"], r["collective"], r["count"], r["bytes_per_step"]) for r in json.loads(capsys.readouterr().out)]
    # dense gradients only (embeddings, head, ln_f; per block norms, q/k/v/proj and the 4 x 64 router)
    dense = (256 * 64 + 32 * 64 + 256 * 64 + 128 + LAYERS * (256 + 4 * (64 * 64 + 64) + 4 * 64)) * 4
    assert rows == [("DP", "allreduce", 1, dense),
                    ("EP", "alltoall", LAYERS, LAYERS * E * 8),  # the int64 counts per expert
                    ("EP", "alltoall", 4 * LAYERS, 4 * LAYERS * routed(2))]


def test_model_refuses_ep_without_experts(capsys):
    assert main(["model", "--dp", "2", "--ep", "2"]) == 1
    assert capsys.readouterr().err == ("error: impossible plan: ep 2 splits experts: the model has none "
                                       "(--experts N gives it some)\n")


def raw_all_to_all_bytes():
    """rank -> (gloo:all_to_all count, input bytes) from the raw traces."""
    out = {}
    for r in (0, 1):
        with gzip.open(MOE / "iteration_3" / f"rank{r}_trace.json.gz") as f:
            evs = json.load(f)["traceEvents"]
        ops = [e["args"] for e in evs if e.get("ph") == "X" and e["name"] == "gloo:all_to_all"]
        size = {"float": 4, "long int": 8}
        out[r] = (len(ops), sum(a["Input Dims"][0][0] * (a["Input Dims"][0][1] if len(a["Input Dims"][0]) > 1 else 1)
                                * size[a["Input type"][0]] for a in ops))
    return out


def test_whatif_on_the_moe_run_and_with_another_top_k(capsys):
    measured = raw_all_to_all_bytes()
    assert main(["whatif", str(MOE), "--format", "json"]) == 0
    rows = {(r["group"], r["collective"]): r for r in json.loads(capsys.readouterr().out)}
    ep = rows[("EP", "alltoall")]
    assert (ep["count"], ep["measured_count"]) == (5 * LAYERS, measured[0][0]) == (10, 10)
    assert ep["bytes"] == LAYERS * (E * 8 + 4 * routed(2))  # the mean per rank
    assert ep["measured_bytes"] == max(b for _, b in measured.values())  # the busiest rank
    assert sum(b for _, b in measured.values()) == 2 * ep["bytes"]  # routing moves shares, not the total
    assert "routing decides each rank's share" in ep["note"]
    assert main(["whatif", str(MOE), "--top-k", "1", "--format", "json"]) == 0
    rows = {(r["group"], r["collective"]): r for r in json.loads(capsys.readouterr().out)}
    assert rows[("EP", "alltoall")]["bytes"] == LAYERS * (E * 8 + 4 * routed(1))
