"""The analytic model's formulas on known sizes."""

import pytest

from tracekit.analytic import PRESETS, GPTShape, Plan, predict_rank, total_params
from tracekit.analytic.predict import ddp_buckets
from tracekit.errors import TracekitError


def shape(name, **kw):
    return GPTShape(**{**PRESETS[name], **kw})


def test_parameter_counts():
    assert total_params(shape("example")) == 134_912  # as torch counts the examples' GPT
    assert total_params(shape("gpt2-small")) == 124_439_808  # GPT-2 small, tied head
    assert round(total_params(shape("gpt3-175b")) / 1e9, 1) == 174.6


def test_ddp_buckets_close_at_their_caps():
    mib = 2**20
    assert ddp_buckets([100] * 3, mib, 25 * mib) == [300]
    assert ddp_buckets([mib, mib // 2, 30 * mib, 10], mib, 25 * mib) == [10 + 30 * mib, mib // 2 + mib]


def test_zero3_doubles_the_allgather_of_zero2():
    m = shape("example", micro_batches=1)
    z2 = {e.collective: e for e in predict_rank(m, Plan(dp=2, zero=2), 0)}
    z3 = {e.collective: e for e in predict_rank(m, Plan(dp=2, zero=3), 0)}
    assert z3["allgather"].bytes == 2 * z2["allgather"].bytes == 2 * 134_912 * 4
    assert z2["allreduce"].bytes == 134_912 * 4  # Gloo carries the reduce_scatter as an allreduce
    nccl = {e.collective for e in predict_rank(m, Plan(dp=2, zero=3, backend="nccl"), 0)}
    assert nccl == {"allgather", "reduce_scatter"}


def test_megatron_tp_textbook_with_fused_qkv():
    m = shape("gpt3-175b")
    (tp,) = [e for e in predict_rank(m, Plan(tp=8, pp=16, dp=64, backend="nccl"), 0) if e.group == "TP"]
    layers = 96 // 16
    act = 1 * 2048 * 12288 * 2
    assert (tp.collective, tp.count, tp.bytes) == ("allreduce", 4 * layers, 4 * layers * act)


def test_pipeline_stages():
    m = shape("example")
    first = {e.collective: e.count for e in predict_rank(m, Plan(pp=4), 0)}
    middle = {e.collective: e.count for e in predict_rank(m, Plan(pp=4), 1)}
    assert first == {"send": 2, "recv": 2} and middle == {"send": 4, "recv": 4}


def test_bad_config_is_a_clear_error():
    with pytest.raises(TracekitError, match="divisible by heads"):
        GPTShape(layers=1, hidden=10, heads=3, vocab=8, seq=4, micro_batch=1)
    with pytest.raises(TracekitError, match="zero must be"):
        Plan(zero=5)


def test_expert_parallel_traffic_mixtral_shape_by_hand():
    # Mixtral-like: 32 MoE layers, hidden 4096, 8 experts, top-2, one 4096-token sequence per rank, bf16
    m = GPTShape(layers=32, hidden=4096, heads=32, vocab=32000, seq=4096, micro_batch=1, dtype="bfloat16",
                 experts=8, top_k=2)
    ep = [e for e in predict_rank(m, Plan(dp=8, ep=8, backend="nccl"), 0) if e.group == "EP"]
    counts, moves = ep
    assert (counts.collective, counts.count, counts.bytes) == ("alltoall", 32, 32 * 8 * 8)  # 8 int64 per layer
    # dispatch + combine, forward + backward: 4 per layer, each 4096 tokens x 2 copies x 4096 x 2 bytes
    assert (moves.collective, moves.count, moves.bytes) == ("alltoall", 4 * 32, 4 * 32 * 4096 * 2 * 4096 * 2)


def test_expert_parameters_are_not_allreduced_under_expert_parallelism():
    m = shape("example", micro_batches=1, experts=4, top_k=2)
    (dp,) = [e for e in predict_rank(m, Plan(dp=2, ep=2), 0) if e.group == "DP"]
    # by hand: embeddings 256x64 + 32x64, head 256x64, ln_f 128; per block ln1 + ln2 256, q/k/v/proj
    # 4 x (64x64 + 64), router 4x64: the 2 local experts (4C MLPs) are left out
    assert dp.bytes == (16384 + 2048 + 16384 + 128 + 2 * (256 + 4 * 4160 + 256)) * 4
    (dense,) = [e for e in predict_rank(m, Plan(dp=2), 0) if e.group == "DP"]  # ep 1: every expert on every rank
    assert dense.bytes - dp.bytes == 2 * 4 * (64 * 256 + 256 + 256 * 64 + 64) * 4


@pytest.mark.parametrize("plan, words", [
    (dict(dp=2, ep=2, experts=0), "the model has none"),
    (dict(dp=3, ep=3, experts=4), "does not divide the model's 4 experts"),
    (dict(dp=4, ep=2, experts=4), "ep = dp"),
    (dict(dp=2, ep=2, tp=2, experts=4), "no tensor parallelism"),
])
def test_impossible_expert_plans_are_refused(plan, words):
    from tracekit.analytic import check_fits
    experts = plan.pop("experts")
    with pytest.raises(TracekitError, match=words):
        check_fits(shape("example", experts=experts, top_k=1), Plan(**plan))
