"""The analytic model's formulas on known sizes."""

import pytest

from tracekit.errors import TracekitError
from tracekit.model import PRESETS, GPTShape, Plan, predict_rank, total_params
from tracekit.model.predict import ddp_buckets


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
