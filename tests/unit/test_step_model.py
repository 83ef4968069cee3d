"""The step model's pure parts on hand-worked cases: pipeline schedules, network laws, the plan's work."""

from __future__ import annotations

import math

import pytest

from tracekit.analytic import GPTShape, Plan, check_fits
from tracekit.analytic.compute import Rates, forward_work
from tracekit.analytic.estimate import ZERO, Estimate
from tracekit.analytic.netlaw import fit_law, predict, prior_law
from tracekit.analytic.pipeline import simulate
from tracekit.analytic.step import Source, predict_step
from tracekit.errors import TracekitError


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_two_stages_four_micro_batches_unit_times(schedule):
    # by hand: stage 0 forwards 0-4, stage 1 forwards 1-5; backwards run 5-9 on stage 1 and 6-10 on
    # stage 0 (GPipe), the same span interleaved with 1F1B: makespan 10, each stage busy 8, bubble 2
    p = simulate([1, 1], [1, 1], 4, schedule=schedule)
    assert (p.makespan, p.busy, p.bubble) == (10, (8, 8), (2, 2))


def test_one_f_one_b_with_a_transfer_between_stages():
    # by hand, 1F1B, 2 stages x 4 micro-batches, F = B = 1, each transfer 0.5: stage 0 F0 0-1, F1 1-2;
    # stage 1 F0 1.5-2.5, B0 2.5-3.5; stage 0 B0 4-5, F2 5-6; stage 1 F1 3.5-4.5, B1 4.5-5.5; stage 0
    # B1 6-7, F3 7-8; stage 1 F2 6.5-7.5, B2 7.5-8.5; stage 0 B2 9-10; stage 1 F3 8.5-9.5, B3 9.5-10.5;
    # stage 0 B3 11-12
    p = simulate([1, 1], [1, 1], 4, schedule="1f1b", p2p=0.5)
    assert (p.makespan, p.end) == (12, (12, 10.5))


def test_each_point_to_point_op_holds_its_stage():
    # issue 38: 2 stages, 2 micro-batches, 1F1B, F 1 and B 2; a send or receive holds stage 0 for 0.5 and stage
    # 1 for 0.25. By hand: s0 F0 0-1, its send to 1.5; F1 1.5-2.5, send to 3.0. s1 receives F0 1.5-1.75,
    # F0 to 2.75, B0 to 4.75, its send to 5.0; receives F1 (sent by 3.0) 5.0-5.25, F1 to 6.25, B1 to 8.25, send
    # to 8.5. s0 receives B0 5.0-5.5, B0 to 7.5; receives B1 8.5-9.0, B1 to 11. Passes alone: (2 + 1) x 3 = 9
    p = simulate([1, 1], [2, 2], 2, schedule="1f1b", xfer=[0.5, 0.25])
    assert p.makespan == 11.0 and p.busy == (6.0, 6.0) and p.end == (11.0, 8.5)
    assert simulate([1, 1], [2, 2], 2, schedule="1f1b").makespan == 9.0


def test_interleaving_shrinks_the_bubble_by_the_chunks():
    # 4 stages, 8 micro-batches, F 1, B 2: 1F1B's step is (M + S - 1)(F + B) = 33; interleaved over two
    # chunks, the warm-up and cool-down are half as long: M (F + B) + (S - 1)(F + B) / 2 = 28.5
    assert simulate([1] * 4, [2] * 4, 8, schedule="1f1b").makespan == 33
    assert simulate([1] * 4, [2] * 4, 8, schedule="interleaved", chunks=2).makespan == 28.5
    with pytest.raises(TracekitError, match="divisible by the stages"):
        simulate([1] * 4, [2] * 4, 6, schedule="interleaved")


def test_the_law_recovers_latency_and_bandwidth_from_several_sizes():
    # alpha 20 us, 10 GB/s (0.1 ns per byte); 8 messages of 8 KiB cost more than 2 of 32 KiB
    pts = [(b, 20_000 + 0.1 * b, b) for b in (8192, 32768, 131072) for _ in range(3)]
    law = fit_law(pts)
    assert (law.alpha_ns, law.ns_per_byte) == (pytest.approx(20_000), pytest.approx(0.1))
    small, large = predict(law, 8, 8192, 8 * 8192)[0].value, predict(law, 2, 32768, 2 * 32768)[0].value
    assert small == pytest.approx(8 * 20_000 + 0.1 * 65536) and large == pytest.approx(2 * 20_000 + 0.1 * 65536)


def test_a_noisy_instance_does_not_move_the_fit():
    # one instance of 50x the others at one size (a shared machine's hiccup): the medians ignore it
    pts = [(b, 20_000 + 0.1 * b, b) for b in (8192, 131072) for _ in range(5)] + [(8192, 50 * 20_819.2, 8192)]
    assert fit_law(pts).alpha_ns == pytest.approx(20_000)


def test_a_tail_in_every_step_counts_and_a_burst_in_one_step_does_not():
    # per step at each size: three instances at the law (alpha 20 us, 0.1 ns/byte) and one 5x slower (a Gloo
    # collective waiting for its core, in every step): the step pays 2x the law on average (3 x 1 + 5) / 4.
    # Step 3 also has a burst: one instance of 100x at 8 KiB. Through the median instance the fit would be
    # the law itself; through each step's mean, the median over the 5 steps: 2x the law
    law = lambda b: 20_000 + 0.1 * b  # noqa: E731
    pts = [(b, k * law(b), b, step) for b in (8192, 131072) for step in range(5) for k in (1, 1, 1, 5)]
    pts.append((8192, 100 * law(8192), 8192, 3))
    fitted = fit_law(pts)
    assert (fitted.alpha_ns, fitted.ns_per_byte) == (pytest.approx(40_000), pytest.approx(0.2))
    # without steps, each instance stands alone: the median instance, the law
    alone = fit_law([p[:3] for p in pts])
    assert (alone.alpha_ns, alone.ns_per_byte) == (pytest.approx(20_000), pytest.approx(0.1))
    # below three steps a burst cannot be told from a tail: the mean of the steps' instances, as the steps
    # paid them (issue 38: the median instance, the law itself, put one-step runs' own steps at 0.81). Two
    # steps without the burst (0 and 1): 2x the law, as over five
    two = fit_law([p for p in pts if p[3] in (0, 1)])
    assert (two.alpha_ns, two.ns_per_byte) == (pytest.approx(40_000), pytest.approx(0.2))
    # with it (3 and 4): at 8 KiB the 8 instances of the two steps (2x the law on average) and the burst
    # (100x): (8 x 2 + 100) / 9 of the law
    from tracekit.analytic.netlaw import _typical
    at8k = [p for p in pts if p[3] in (3, 4) and p[0] == 8192]
    assert _typical([(p[0], p[1], p[3]) for p in at8k]) == pytest.approx((8 * 2 + 100) / 9 * law(8192))


def test_one_size_spans_all_latency_to_all_bandwidth():
    # measured: 32 KiB in 40 us. 8 KiB messages: all bandwidth 10 us each, all latency 40 us each
    law = fit_law([(32768, 40_000, 32768)] * 3)
    est, notes = predict(law, 8, 8192, 8 * 8192)
    t, lo, hi = est.value, est.lo, est.hi
    assert (lo, hi) == (pytest.approx(8 * 10_000 / 1.5), pytest.approx(8 * 40_000 * 1.5))  # 2 octaves out
    assert t == pytest.approx(8 * math.sqrt(10_000 * 40_000))
    assert notes == ["extrapolated 2.0 factors of 2 below the measured message sizes"]  # 8 KiB against 32
    assert law.label().startswith("one message size measured")


def test_the_prior_is_labelled_and_spans_nccl_latency():
    law = prior_law(450.0)  # H100 NVLink datasheet: 450 GB/s; typical 80 % of it
    assert law.label().startswith("prior, not measured") and law.bus_gbps == pytest.approx(360)
    est, _ = predict(law, 1, 1, 1)  # one byte: all latency, 10 us (5-30)
    t, lo, hi = est.value, est.lo, est.hi
    assert (t, lo, hi) == (pytest.approx(10_000, rel=1e-3), pytest.approx(5_000, rel=1e-3),
                           pytest.approx(30_000, rel=1e-3))


def test_work_of_a_layer_by_hand():
    m = GPTShape(layers=2, hidden=64, heads=4, vocab=256, seq=32, micro_batch=4)
    w = forward_work(m, Plan(tp=2), 0)
    tokens = 4 * 32
    assert w.gemm == 2 * (2 * tokens * 12 * 64 * 64 / 2) + 2 * tokens * 64 * 256  # head replicated under tp
    assert w.attention == 2 * 4 * 4 * 32 * 32 * 64 / 2
    assert w.elementwise == 2 * tokens * 64 * (4 + 8 / 2) + tokens * 64 + tokens * 256


def test_the_step_adds_its_parts():
    m = GPTShape(layers=2, hidden=64, heads=4, vocab=256, seq=32, micro_batch=4)
    src = Source(Rates(1e-6, 1e-6, 1e-6), wait_share=0.1)
    (st,) = predict_step(m, Plan(dp=2), src, [Estimate(5.0, 4.0, 6.0)])
    assert st.step.value == pytest.approx(st.compute.value * 1.1 + 5.0)
    assert (st.wait.lo, st.wait.hi) == (0.0, pytest.approx(0.2 * st.compute.value))


def test_a_pipeline_step_is_the_simulated_makespan_plus_the_optimizer():
    m = GPTShape(layers=2, hidden=64, heads=4, vocab=256, seq=32, micro_batch=4, micro_batches=4)
    src = Source(Rates(1e-6, 1e-6, 0.0), wait_share=0.0)  # elementwise free: no optimizer time
    zero = ZERO
    stages = predict_step(m, Plan(pp=2, schedule="gpipe"), src, [zero, zero], zero)
    f = [src.rates.time(forward_work(m, Plan(pp=2), s)) for s in (0, 1)]
    expect = simulate(f, [2 * x for x in f], 4, schedule="gpipe")
    assert max(s.step.value for s in stages) == pytest.approx(expect.makespan)
    assert stages[0].bubble.value == pytest.approx(expect.bubble[0])


def test_tensor_parallel_experts_are_refused():
    m = GPTShape(layers=2, hidden=64, heads=4, vocab=256, seq=32, micro_batch=4, experts=4)
    with pytest.raises(TracekitError, match="tp 2 would shard the model's 4 experts"):
        check_fits(m, Plan(tp=2), 2)
