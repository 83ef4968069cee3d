"""tracekit whatif. Expectations never come from tracekit.analytic (which both the synthetic generator and
whatif use): they come from the generator's stated network law (5 us + bus traffic / 100 GB/s, with
nccl-tests' bus factors), from counts worked by hand from the model's shape (Megatron: 2 allreduces per
layer forward, 2 backward with a fused qkv), and from what the traces record."""

import gzip
import json
import pathlib

import pytest

import tracekit
from benchmarks import synth_traces as synth
from tests.conftest import shared_traces
from tracekit.cli.main import main
from tracekit.commands.whatif import fit, whatif

ROOT = pathlib.Path(__file__).resolve().parents[2]
LAT_US, GBPS = 5.0, 100.0  # the generator's stated law (benchmarks/synth_traces.py docstring)

MEASURED = """
SELECT c.pg_desc AS grp, CASE WHEN c.collective IN ('send', 'recv') THEN c.collective ELSE i.collective END AS coll,
       w.rank, CAST(sum(i.transfer_ns) AS DOUBLE) AS t
FROM collective_waits w JOIN collective_instances i USING (instance_key)
JOIN _collectives c ON c.rank = w.rank AND c.event_index = w.event_index
WHERE i.status = 'clean' GROUP BY ALL
"""


def job(tmp, plan, steps=2, *extra):
    synth.main(["--ranks", "8", "--plan", plan, "--steps", str(steps), "-o", str(tmp / plan), *extra])
    return tracekit.ingest([tmp / plan], tmp / f"run-{plan}", jobs=2)


def test_the_fit_recovers_the_law(tmp_path):
    laws = {(f["collective"], f["kind"]): f for f in fit(job(tmp_path, "tp2-pp2-dp2"))}
    dp = laws[("allreduce", "DP")]  # several message sizes: latency and bandwidth apart
    assert dp["latency_us"] == pytest.approx(LAT_US, abs=0.2)
    assert dp["bus_gbps"] == pytest.approx(GBPS, rel=0.01)
    # DDP's buckets: two sizes, so latency and bandwidth apart (a fit, not "a line through two points")
    assert dp["law"] == "alpha + bytes/beta through the typical times of 2 message sizes"
    assert laws[("allreduce", "TP")]["law"].startswith("one message size measured")  # every TP message: one activation


def test_another_plan_is_timed_by_the_stated_law_on_hand_worked_counts(tmp_path):
    run = job(tmp_path, "tp2-pp2-dp2")  # gpt2-small, recorded; predict tp 4, pp 1 (dp takes the rest: 2)
    rows = {(r["group"], r["collective"]): r for r in whatif(run, changes={"tp": 4, "pp": 1}).to_pylist()}
    tp = rows[("TP", "allreduce")]
    act = 8 * 1024 * 768 * 2  # micro-batch 8 x seq 1024 x hidden 768 x bf16
    assert (tp["count"], tp["bytes"]) == (12 * 4, 12 * 4 * act)  # 12 layers x (2 forward + 2 backward)
    per = LAT_US + act * 2 * 3 / 4 / (GBPS * 1e3)  # allreduce bus factor 2(n-1)/n at n = 4, in us
    assert tp["transfer_ms"] == pytest.approx(48 * per / 1e3, rel=0.02)
    assert "groups of 4 ranks timed by the allreduce law of 2" in tp["note"]
    dp = rows[("DP", "allreduce")]
    # one TP rank's gradients, bf16: per layer ln 2x2C, qkv 3C/4 x C + 3C/4, proj C x C/4 + C,
    # fc C x C + C, fc_out C x C + C (C = 768); embeddings 50257 x C + 1024 x C, ln_f 2C, head tied
    C = 768
    layer = 4 * C + (3 * C // 4) * C + 3 * C // 4 + C * (C // 4) + C + 2 * (C * C + C)
    assert dp["bytes"] == 2 * (12 * layer + 50257 * C + 1024 * C + 2 * C)
    assert dp["transfer_ms"] == pytest.approx((dp["count"] * LAT_US + dp["bytes"] * 1.0 / (GBPS * 1e3)) / 1e3,
                                              rel=0.02)  # dp 2: bus factor 1


def test_own_plan_is_the_default_and_measured_stands_beside_predicted(tmp_path, capsys):
    job(tmp_path, "tp2-dp4", 2, "--no-config")  # no recorded config: the plan is inferred from the groups
    capsys.readouterr()
    assert main(["whatif", str(tmp_path / "run-tp2-dp4"), "--preset", "gpt2-small", "--format", "json"]) == 0
    out = capsys.readouterr()
    assert "plan inferred from the trace: dp 4 (groups described as DP); tp 2 (groups described as TP)" in out.err
    rows = {(r["group"], r["collective"]): r for r in json.loads(out.out)}
    tp = rows[("TP", "allreduce")]
    act = 8 * 1024 * 768 * 2
    assert (tp["count"], tp["measured_count"]) == (48, 48)  # integers, per step
    assert tp["bytes"] == tp["measured_bytes"] == 48 * act
    # measured: every TP instance's transfer is the stated law at n = 2 (bus factor 1)
    assert tp["measured_transfer_ms"] == pytest.approx(48 * (LAT_US + act / (GBPS * 1e3)) / 1e3, rel=0.01)


def test_measured_column_is_the_busiest_ranks_transfer_time(tmp_path):
    run = tracekit.open(ROOT / "examples" / "traces" / "pp")
    rows = {(r["group"], r["collective"]): r for r in whatif(run).to_pylist()}
    per_rank = {}
    for r in run.sql(MEASURED).to_pylist():
        per_rank.setdefault(r["coll"], []).append(r["t"] / 1e6)  # one step in this run
    for coll in ("send", "recv"):
        assert rows[("PP", coll)]["measured_transfer_ms"] == pytest.approx(max(per_rank[coll]))
        assert rows[("PP", coll)]["count"] == 2  # 2 micro-batches, first and last stage: one send each way


@pytest.mark.parametrize("flags, why", [
    (["--tp", "3"], "impossible plan: tp 3 does not divide the model's 4 attention heads"),
    (["--pp", "4", "--dp", "1"],
     "impossible plan: pp 4 does not divide the model's 2 layers (a stage would hold no layer)"),
    (["--dp", "4"], "impossible plan: dp 4 x tp 2 x pp 1 = 8 ranks, the run has 2"),
    (["--tp", "1", "--sequence-parallel"], "impossible plan: sequence parallelism shards over tensor-parallel ranks"),
])
def test_impossible_plans_are_refused_in_one_line(capsys, flags, why):
    assert main(["whatif", str(ROOT / "examples" / "traces" / "tp"), *flags]) == 1
    err = capsys.readouterr().err
    assert why in err and err.count("\n") == 1


def test_model_refuses_a_stage_without_layers(capsys):
    assert main(["model", "--pp", "8"]) == 1
    assert capsys.readouterr().err == ("error: impossible plan: pp 8 does not divide the model's 2 layers "
                                       "(a stage would hold no layer)\n")


def test_another_world_size_is_asked_for_explicitly(capsys):
    run = str(ROOT / "examples" / "traces" / "tp")
    assert main(["whatif", run, "--tp", "4", "--dp", "2", "--world", "8", "--format", "json"]) == 0
    row = next(r for r in json.loads(capsys.readouterr().out) if r["group"] == "TP")
    assert "groups of 4 ranks timed by the allreduce law of 2" in row["note"]


def test_fit_warns_on_a_law_from_one_message_size(capsys):
    # the ddp example's step runs one bucket: one allreduce of all 134,912 fp32 gradients per step
    assert main(["whatif", str(ROOT / "examples" / "traces" / "ddp"), "--fit", "--format", "json"]) == 0
    (law,) = json.loads(capsys.readouterr().out)
    assert (law["min_bytes"], law["max_bytes"], law["sizes"]) == (134912 * 4, 134912 * 4, 1)
    assert law["law"].startswith("one message size measured: latency and bandwidth not separable")


def test_dlrm_is_refused_with_the_reason():
    run = shared_traces() / "param_dlrm_kineto_8rank"
    from tracekit.errors import TracekitError
    with pytest.raises(TracekitError, match="runs 40 alltoall .*which it does not predict"):
        whatif(tracekit.open(run), preset="example")


def test_a_real_nccl_trace_with_a_config_file(tmp_path, capsys):
    trace = shared_traces() / "tracelens_b200_eager" / "eager_trace.json.gz"
    cfg = tmp_path / "job.json"
    model = {"layers": 2, "hidden": 64, "heads": 4, "vocab": 256, "seq": 32, "micro_batch": 4}
    cfg.write_text(json.dumps({"model": model, "plan": {"dp": 8}}))
    assert main(["whatif", str(trace.parent), "--config", str(cfg), "--format", "json"]) == 0
    out = capsys.readouterr()
    assert "plan from --config" in out.err
    rows = {(r["group"], r["collective"]): r for r in json.loads(out.out)}
    # the trace's one NCCL kernel: an allgather of 201,088 bf16 elements in a group of 8
    (k,) = [e for e in json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]
            if e.get("cat") == "kernel" and "nccl" in e["name"].lower()]
    ag = rows[("DP", "allgather")]
    assert (ag["measured_count"], ag["measured_bytes"]) == (1, 402176)
    ar = rows[("DP", "allreduce")]  # DDP: one bucket of all 134,912 fp32 gradients (under the 1 MiB first cap)
    assert (ar["count"], ar["bytes"]) == (1, 539648)
    # timed by the allgather's law of one size on the same group: between all-bandwidth, t x (539,648 x
    # 2·7/8) / (402,176 x 7/8), and all-latency, t; the point is their geometric mean
    t = k["dur"] / 1e3
    assert ar["transfer_ms"] == pytest.approx((t * 2 * 539648 / 402176 * t) ** 0.5, rel=1e-6)
    assert "timed by the allgather law of 8 ranks" in ar["note"] and "one rank traced" in ar["note"]


def test_cli_prints_the_laws_and_draws_them(tmp_path, capsys):
    job(tmp_path, "tp2-pp2-dp2")
    capsys.readouterr()  # the generator's own output
    assert main(["whatif", str(tmp_path / "run-tp2-pp2-dp2"), "--fit", "--format", "json",
                 "--plot", str(tmp_path / "fit.png")]) == 0
    laws = {(f["collective"], f["kind"]) for f in json.loads(capsys.readouterr().out)}
    assert laws == {("allreduce", "DP"), ("allreduce", "TP"), ("sendrecv", "PP")}
    assert (tmp_path / "fit.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("extra, said", [
    ([], "model and plan from the config recorded in the traces"),
    (["--preset", "example", "--layers", "4"],
     "model: preset example with --layers 4; plan from the config recorded in the traces")])
def test_the_note_says_where_the_model_and_the_plan_come_from(capsys, extra, said):
    """examples/traces/ddp records its config (DDP over 2 ranks): with --preset the model is the preset's
    and only the plan is the recorded one (the note said 'plan from the config recorded' alone)."""
    assert main(["whatif", str(ROOT / "examples" / "traces" / "ddp"), *extra, "--format", "json"]) == 0
    run = ROOT / "examples" / "traces" / "ddp"
    assert capsys.readouterr().err.splitlines()[0] == (
        f"{said}; times from the network laws and compute measured in {run}; predicted: dp 2 x tp 1 x pp 1, zero 0")


def _recorded_config(name: str) -> dict:
    (f,) = (ROOT / "examples" / "traces" / name).glob("*/rank0_trace.json.gz")
    return json.loads(gzip.decompress(f.read_bytes()))["tracekit_config"]


@pytest.mark.parametrize("plan_flags, model_flags", [(["--tp", "2"], []), (["--tp", "2", "--world", "4"], []),
                                                     (["--tp", "2"], ["--micro-batch", "8"])])
def test_a_plan_flag_is_said_and_so_is_a_step_of_another_batch(capsys, plan_flags, model_flags):
    """A fresh user's report: `whatif --tp 2` on the FSDP recording (dp 2, ZeRO 3) said 'plan from the config
    recorded' and 'zero 3' at dp 1, and kept the run's micro-batch without a word, so a step of half the
    sequences read as a saving. The note now names the flags over the recorded plan, drops ZeRO at dp 1 (one
    replica has nothing to shard), and says the sequences a step against the run's, with the micro-batch
    that trains the run's. The numbers from the recorded config: micro-batch 4 x dp 2 = 8 sequences a step."""
    cfg = _recorded_config("fsdp")
    mb, dp = cfg["model"]["micro_batch"], cfg["plan"]["dp"]
    assert (mb, dp, cfg["plan"]["zero"], cfg["plan"]["tp"]) == (4, 2, 3, 1)
    assert main(["whatif", str(ROOT / "examples" / "traces" / "fsdp"), *plan_flags, *model_flags,
                 "--format", "json"]) == 0
    note = capsys.readouterr().err.splitlines()[0]
    assert f"plan from the config recorded in the traces, with {' '.join(plan_flags)} over it" in note
    world = int(plan_flags[plan_flags.index("--world") + 1]) if "--world" in plan_flags else cfg["world"]
    new_dp = world // 2  # tp 2: dp takes the rest of the world
    assert f"predicted: dp {new_dp} x tp 2 x pp 1, zero {0 if new_dp == 1 else 3}" in note
    run_batch = mb * dp * world // cfg["world"]  # the run's sequences a step, scaled to the world asked
    if model_flags:
        assert "sequences a step" not in note  # 8 x dp 1 = the run's 8
    else:
        assert f"; {mb * new_dp} sequences a step (micro-batch {mb} x dp {new_dp}) where " in note
        assert f"not the same work a step (--micro-batch {run_batch // new_dp} trains the run's)" in note
        assert (f"the run's {mb * dp} on 2 ranks are {run_batch} on {world}" if world != 2
                else f"the run trains {run_batch}") in note


def test_zero_at_dp_1_is_dropped_and_said(capsys):
    """ZeRO shards over the data-parallel replicas: at dp 1 there is nothing to shard, the collectives are the
    same. A fresh user's report: `--zero 3` on the TP recording (dp 1) gave the step of the run's own plan
    with another interval and source_* columns, as if it were another plan. It is the run's own plan now,
    the note saying the stage was dropped; the FSDP recording's ZeRO 3 dropped by --tp 2 is said too."""
    tp = str(ROOT / "examples" / "traces" / "tp")
    assert _recorded_config("tp")["plan"]["dp"] == 1
    assert main(["whatif", tp, "--format", "json"]) == 0
    own = json.loads(capsys.readouterr().out)
    assert main(["whatif", tp, "--zero", "3", "--format", "json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out) == own and "measured_step_ms" in own[0]
    assert "zero 0; --zero 3 dropped at dp 1 (one replica has nothing to shard)" in out.err.splitlines()[0]
    assert main(["whatif", str(ROOT / "examples" / "traces" / "fsdp"), "--tp", "2", "--format", "json"]) == 0
    assert "zero 0; the run's zero 3 dropped at dp 1" in capsys.readouterr().err.splitlines()[0]


def test_world_alone_names_the_world_asked_for(capsys):
    """`--world 4` alone kept the DDP recording's dp 2 and said "= 2 ranks, the run has 4": the run has 2."""
    assert main(["whatif", str(ROOT / "examples" / "traces" / "ddp"), "--world", "4"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "dp 2 x tp 1 x pp 1 = 2 ranks, --world asks for 4 (--dp, --tp or --pp to fill them)" in err[0]


def test_a_batch_that_does_not_scale_to_the_world_is_said_not_rounded(tmp_path, capsys):
    """A run of 3 sequences a step on 2 ranks (the TP recording without its recorded config, --config giving
    micro-batch 3) trains 4.5 a step on 3 ranks: the note said 4 (rounded down) and offered a micro-batch
    for it, and --sweep --world 3 ranked plans 'at 4 sequences per step' (an empty table, exit 0)."""
    src = ROOT / "examples" / "traces" / "tp"
    cfg = _recorded_config("tp")
    for f in sorted(src.rglob("*.json.gz")):  # the traces without their recorded config
        doc = json.loads(gzip.decompress(f.read_bytes()))
        doc.pop("tracekit_config")
        out = tmp_path / "traces" / f.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(gzip.compress(json.dumps(doc).encode()))
    conf = tmp_path / "cfg.json"
    conf.write_text(json.dumps({"model": {**cfg["model"], "micro_batch": 3},
                                "plan": {k: cfg["plan"][k] for k in ("dp", "tp", "pp", "zero")}}))
    run = tmp_path / "run"
    assert main(["ingest", str(tmp_path / "traces"), "-o", str(run), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["whatif", str(run), "--config", str(conf), "--tp", "1", "--world", "3", "--format", "json"]) == 0
    note = capsys.readouterr().err.splitlines()[0]
    assert "where the run's 3 on 2 ranks are 4.5 on 3: not the same work a step (no whole micro-batch" in note
    assert main(["whatif", str(run), "--config", str(conf), "--sweep", "--world", "3"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the run's 3 sequences a step on 2 ranks are 4.5 on 3, not a whole number" in err[0]
    assert "a multiple of 2" in err[0]


def _profiler_step_median_ms(run_dir) -> float:
    """The run's step from its trace files alone: per ProfilerStep#k the longest over ranks, median."""
    per: dict = {}
    for f in sorted(run_dir.glob("*/rank*_trace.json.gz")):
        for e in json.loads(gzip.decompress(f.read_bytes()))["traceEvents"]:
            if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"):
                per[e["name"]] = max(per.get(e["name"], 0.0), e["dur"] / 1e3)
    vals = sorted(per.values())
    n = len(vals)
    return vals[n // 2] if n % 2 else (vals[n // 2 - 1] + vals[n // 2]) / 2


def test_the_step_comes_first_with_its_interval_and_the_measured_step(capsys):
    run = ROOT / "examples" / "traces" / "ddp"
    assert main(["whatif", str(run), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    step = rows[0]
    assert step["group"] == "step" and step["step_ms_lo"] < step["step_ms"] < step["step_ms_hi"]
    assert step["measured_step_ms"] == pytest.approx(_profiler_step_median_ms(run), rel=1e-6)
    assert "rescaled from" in step["note"] and all(r["step_ms"] is None for r in rows[1:])


def test_another_plans_table_names_the_runs_figures_source(capsys):
    assert main(["whatif", str(ROOT / "examples" / "traces" / "ddp"), "--tp", "2", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert "source_step_ms" in rows[0] and not any(k.startswith("measured_") for k in rows[0])
    dp = next(r for r in rows if r["group"] == "DP")  # the run's DDP allreduce, not the TP plan's
    assert dp["count"] is None and dp["source_count"] >= 1


def test_tensor_parallel_moe_is_refused_in_one_line(capsys):
    assert main(["whatif", str(ROOT / "examples" / "traces" / "moe"), "--dp", "1", "--tp", "2", "--ep", "1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "tp 2 would shard the model's" in err[0]


def test_sweep_ranks_every_plan_by_its_step(capsys):
    assert main(["whatif", str(ROOT / "examples" / "traces" / "ddp"), "--sweep", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    steps = [r["step_ms"] for r in rows]
    assert steps == sorted(steps) and [r["place"] for r in rows] == list(range(1, len(rows) + 1))
    plans = {(r["plan"], r["micro_batches"]) for r in rows}
    # 2 ranks of the example GPT (4 heads, 2 layers): dp 2 with ZeRO 0-3, tp 2 with and without sequence
    # parallelism, pp 2 with 2, 4 and 8 micro-batches
    assert len(plans) == 4 + 2 + 3
    assert all(r["step_ms_lo"] <= r["step_ms"] <= r["step_ms_hi"] for r in rows)


SWEEP = ROOT / "examples" / "traces" / "sweep"
# each plan of the shipped sweep (2 ranks), asked from the tensor- and sequence-parallel recording by flags
FROM_TP_SP = {"ddp": ["--tp", "1", "--dp", "2"], "zero1": ["--tp", "1", "--dp", "2", "--zero", "1"],
              "zero2": ["--tp", "1", "--dp", "2", "--zero", "2"], "fsdp": ["--tp", "1", "--dp", "2", "--zero", "3"],
              "tp": ["--no-sequence-parallel"], "tp-sp": [],
              "pp-mb2": ["--tp", "1", "--pp", "2", "--micro-batches", "2"],
              "pp-mb4": ["--tp", "1", "--pp", "2", "--micro-batch", "4", "--micro-batches", "4"]}


def _collectives(rows: list[dict], prefix: str) -> dict:
    """(group, collective) -> (count, bytes) per step. DDP's gradient all-reduce (a DP all-reduce where the
    DP group gathers nothing) by its bytes alone: its buckets follow bucket_cap_mb, which the DDP
    recordings record and a tensor-parallel one does not."""
    got = {(r["group"], r["collective"]): (r[f"{prefix}count"], r[f"{prefix}bytes"])
           for r in rows[1:] if r[f"{prefix}count"] is not None}
    if ("DP", "allreduce") in got and ("DP", "allgather") not in got:
        got[("DP", "allreduce")] = (None, got[("DP", "allreduce")][1])
    return got


@pytest.mark.parametrize("plan", sorted(FROM_TP_SP))
def test_every_plan_can_be_asked_from_a_sequence_parallel_run(tmp_path, capsys, plan):
    """Issue 38: from a TP + sequence-parallel run, --tp 1 refused ("needs tp > 1") and nothing turned
    sequence parallelism off, so 7 of the sweep's 8 two-rank plans could not be asked. Each is asked by its
    flags, and the collectives predicted are the ones that plan's own recording ran (its measured counts and
    bytes per step, from the traces)."""
    tracekit.ingest([SWEEP / "tp-sp"], tmp_path / "tp-sp", jobs=1)
    own = tracekit.ingest([SWEEP / plan], tmp_path / plan, jobs=1)
    assert main(["whatif", str(tmp_path / "tp-sp"), *FROM_TP_SP[plan], "--format", "json"]) == 0
    asked = json.loads(capsys.readouterr().out)
    recorded = whatif(own).to_pylist()
    assert _collectives(asked, "") == _collectives(recorded, "measured_")
    assert asked[0]["step_ms"] > 0


def test_the_api_honours_sequence_parallel_false(tmp_path):
    """``sequence_parallel=False`` was dropped (``or None``): the run's sequence parallelism stayed."""
    run = tracekit.ingest([SWEEP / "tp-sp"], tmp_path / "tp-sp", jobs=1)
    tp = tracekit.ingest([SWEEP / "tp"], tmp_path / "tp", jobs=1)
    rows = tracekit.whatif(run, sequence_parallel=False).to_pylist()
    assert _collectives(rows, "") == _collectives(whatif(tp).to_pylist(), "measured_")
    assert _collectives(rows, "") != _collectives(whatif(run).to_pylist(), "measured_")


def test_a_degree_kept_from_the_run_is_named_where_the_plan_cannot_fit(capsys):
    """From a tp 2 run on 2 ranks, --pp 2 keeps tp 2: 4 ranks. The refusal says that tp 2 is the run's
    (it named only --world)."""
    assert main(["whatif", str(ROOT / "examples" / "traces" / "tp"), "--pp", "2"]) == 1
    err = capsys.readouterr().err
    assert "tp 2 x pp 2 = 4 does not divide 2 ranks (tp 2 is the run's: give --tp/--pp too;" in err


def test_a_counterfactual_refuses_a_plan_field_by_its_flag(capsys):
    """A replay runs the run's own plan: sequence_parallel=False (dropped before, as None) is refused, by
    the flag that gives it in the command, by its parameter in the API's one-call whatif (the API names
    no flag: issue 38, item 5)."""
    from tracekit.errors import TracekitError

    tp = ROOT / "examples" / "traces" / "tp"
    assert main(["whatif", str(tp), "--fix-rank", "1", "--no-sequence-parallel"]) == 1
    assert "--no-sequence-parallel with --fix-rank/--comm-speedup/--overlap" in capsys.readouterr().err
    with pytest.raises(TracekitError, match="^sequence_parallel with fix_ranks/comm_speedup/overlap"):
        tracekit.whatif(tracekit.open(tp), fix_ranks=(1,), sequence_parallel=False)


def test_a_sweep_refuses_a_plan_flag_it_would_drop(capsys):
    """--sweep tries every plan for the world size: --tp 2 beside it was dropped without a word (a reviewer,
    issue 38); now refused, by the flag in the command, by the field in the API."""
    ddp = ROOT / "examples" / "traces" / "ddp"
    assert main(["whatif", str(ddp), "--sweep", "--tp", "2", "--no-sequence-parallel"]) == 1
    err = capsys.readouterr().err
    assert "--tp 2, --no-sequence-parallel with --sweep: the sweep tries every plan" in err and err.count("\n") == 1
    with pytest.raises(tracekit.TracekitError, match="^tp with sweep: the sweep tries every plan"):
        tracekit.predict_plan(tracekit.open(ddp), sweep=True, tp=2)
    assert main(["whatif", str(ddp), "--sweep", "--micro-batches", "4"]) == 1  # the sweep tries every count
    assert "--micro-batches 4 with --sweep" in capsys.readouterr().err
    assert main(["whatif", str(ddp), "--sweep", "--world", "2"]) == 0  # --world is the sweep's


def test_a_schedule_without_a_pipeline_changes_nothing():
    """A reviewer (issue 38): --schedule interleaved on a run without a pipeline read as another plan: its
    interval the calibrated one of a plan the run did not measure, its columns source_*. A schedule is a
    pipeline's: without one the plan is the run's own."""
    run = tracekit.open(ROOT / "examples" / "traces" / "ddp")
    own, same = tracekit.predict_plan(run), tracekit.predict_plan(run, schedule="interleaved")
    assert same.to_pylist() == own.to_pylist() and "measured_step_ms" in same.column_names


def test_the_three_verbs_answer_as_the_command_does():
    """Issue 38, item 5: the API has one function per use, each with its own parameters: the fitted laws,
    a plan's step, a counterfactual replay; each equals what the one-call whatif gives for the same ask."""
    run = tracekit.open(ROOT / "examples" / "traces" / "tp")
    assert tracekit.fit_laws(run).to_pylist() == tracekit.whatif(run, fit=True).to_pylist()
    a, b = tracekit.predict_plan(run, tp=1, dp=2), tracekit.whatif(run, tp=1, dp=2)
    assert a.to_pylist() == b.to_pylist() and a.schema.metadata == b.schema.metadata
    with pytest.raises(tracekit.TracekitError, match="no field tensor_parallel; the plan's are dp, tp"):
        tracekit.predict_plan(run, tensor_parallel=2)
    import inspect
    assert set(inspect.signature(tracekit.counterfactual).parameters) == {"run", "fix_ranks", "comm_speedup",
                                                                          "overlap"}


@pytest.mark.parametrize("flags, why", [
    (["--world", "0"], "--world 0: give the number of ranks the plan is for, at least 1"),
    (["--world", "-8"], "--world -8: give the number of ranks the plan is for, at least 1"),
    (["--cores", "0"], "--cores 0: give the cores a host's ranks share, at least 1"),
    (["--cores", "-1"], "--cores -1: give the cores a host's ranks share, at least 1"),
])
def test_no_ranks_and_no_cores_are_refused(capsys, flags, why):
    """Issue 40, item 8: --world 0 stood for the run's world and --cores 0 or -1 were taken (-1 changed the
    prediction); a plan has ranks and a host cores."""
    assert main(["whatif", str(ROOT / "examples" / "traces" / "ddp"), *flags]) == 1
    assert capsys.readouterr().err == f"error: {why}\n"


def test_transfers_slowed_past_the_replays_clock_are_refused(capsys):
    """Issue 40, item 6: --comm-speedup 1e-15 (transfers 10^15 times slower) overflowed the replay's int64
    nanoseconds and predicted a step shorter than measured. A factor below 0.001 is refused; at 0.01 no rank's
    step is predicted shorter than replayed (slower transfers never shorten a step)."""
    run = str(ROOT / "examples" / "traces" / "ddp")
    assert main(["whatif", run, "--comm-speedup", "1e-15"]) == 1
    assert capsys.readouterr().err == (
        "error: --comm-speedup 1e-15: give a finite factor of at least 0.001 (2: transfers twice as fast, 0.5: "
        "twice as slow); a smaller one is past what the replay's nanosecond clock holds\n")
    assert main(["whatif", run, "--comm-speedup", "0.01", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(r["predicted_ms"] >= r["replayed_ms"] for r in rows)


def test_a_preset_over_a_run_that_records_no_model_says_it_is_assumed(tmp_path, capsys):
    """Also seen in issue 40: `whatif --sweep --preset gpt2-small` on a ResNet run ranked 56 GPT plans without
    saying that the measured work is not a GPT's. On traces that record no model (the generator's
    --no-config), the note says the preset is assumed to be what the run trained."""
    synth.main(["--ranks", "2", "--plan", "dp2", "--steps", "2", "--no-config", "-o", str(tmp_path / "t")])
    assert main(["whatif", str(tmp_path / "t"), "--preset", "gpt2-small", "--format", "json"]) == 0
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith("model: preset gpt2-small (the traces record no model: the preset is taken as what "
                            "this run trained and the work measured as its; if the run trained another model, "
                            "these are not its steps)"), first


def test_sweep_in_80_columns_prints_every_plan_whole(tmp_path, capsys, monkeypatch):
    """In an 80-column pipe the plan column was cut to 'dp 2 x tp 1 x pp 1, z…': plans that differ only in
    their zero stage looked alike. The plan (the table's key) is shown whole; other columns give way, and
    the predicted step stays."""
    run = tmp_path / "run"
    assert main(["ingest", str(ROOT / "examples" / "traces" / "fsdp"), "-o", str(run)]) == 0
    capsys.readouterr()
    assert main(["whatif", str(run), "--sweep", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["whatif", str(run), "--sweep"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 80 and "…" not in "".join(lines)
    body = [ln for ln in lines if ln.strip()[:1].isdigit()]
    assert len(body) == len(rows) and len({r["plan"] for r in rows}) > 4  # zero 0..3 are different plans
    for ln, r in zip(body, rows, strict=True):
        place, rest = ln.split(None, 1)
        assert int(place) == r["place"] and rest.startswith(r["plan"] + "  ")
        assert ln.split()[-1] == f"{r['step_ms']:.3f}"  # step_ms kept, right of the plan
