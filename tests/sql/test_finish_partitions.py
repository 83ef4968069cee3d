"""The finish rules (tracekit/sql/finish: step_breakdown, why_late's lead-ups) are derived after the reduce
a partition of ranks at a time, each partition seeing its own ranks' rows only. With one rank a partition
the reports must still give the hand-worked and planted figures of tests/sql/test_breakdown.py and
tests/cli/test_planted.py (their expected values come from the events' times and the generator's
constants, not from tracekit)."""

import os

import pytest

import tests.cli.test_planted as planted
import tests.sql.test_breakdown as hand
import tracekit
import tracekit.derive
from tests.conftest import live, shared_traces


def one_rank_a_partition(monkeypatch):
    monkeypatch.setattr(tracekit.derive, "FINISH_RANKS", 1)


def finish_files(run, name):
    d = os.path.join(live(run), "facts", name)
    return sorted(f for f in os.listdir(d) if f.endswith(".parquet"))


def test_the_hand_worked_breakdown_with_one_rank_a_partition(tmp_path, monkeypatch):
    one_rank_a_partition(monkeypatch)
    hand.test_a_hand_worked_timeline(tmp_path)
    assert finish_files(tmp_path / "run", "step_breakdown") == ["ranks-0000000-0000000.parquet",
                                                                "ranks-0000001-0000001.parquet"]


def test_the_planted_slow_op_with_one_rank_a_partition(tmp_path, monkeypatch):
    one_rank_a_partition(monkeypatch)
    planted.test_the_straggler_explanation_names_the_planted_slow_op(tmp_path)
    assert len(finish_files(tmp_path / "run-slow", "_lead_up_parts")) == 4


CPU_CATS = ("cpu_op", "user_annotation", "python_function")


def why_late_by_hand(run):
    """why_late's late and others' times per (late rank, kind, name), worked out here in Python from the
    events, the kernels and the matched instances, as docs/definitions.md defines them: each rank's
    lead-up to a collective runs from its previous collective's launch (the first: its step's start) to
    this one's, on the rank's own trace clock (ties: in the trace's order); in it, the launching thread's
    CPU ops and the non-comm kernels launched, by name."""
    from collections import defaultdict

    waits = run.sql("SELECT instance_key, rank, event_index, ts_ns FROM collective_waits").to_pylist()
    kernels = run.sql("SELECT rank, event_index, name, kind, dur_ns, launch_ts_ns, launch_pid, launch_tid "
                      "FROM gpu_kernels").to_pylist()
    by_index = {(k["rank"], k["event_index"]): k for k in kernels}
    events = run.sql("SELECT rank, event_index, name, cat, ph, ts_ns, dur_ns, pid, tid FROM events").to_pylist()
    ev_index = {(e["rank"], e["event_index"]): e for e in events}
    steps = defaultdict(list)
    for s in run.sql("SELECT rank, ts_ns FROM steps").to_pylist():
        steps[s["rank"]].append(s["ts_ns"])
    insts = run.sql("SELECT instance_key, last_rank, ranks_present FROM collective_instances "
                    "WHERE status = 'clean' AND ranks_present > 1").to_pylist()
    lead = defaultdict(list)  # rank -> [(t1, event_index, instance_key, pid, tid)], on the rank's trace clock
    for w in waits:
        k = by_index.get((w["rank"], w["event_index"]))
        e = ev_index[(w["rank"], w["event_index"])]  # the kernel's or the Gloo op's own event
        if k is not None:
            t1 = k["launch_ts_ns"] if k["launch_ts_ns"] is not None else e["ts_ns"]
            pid, tid = k["launch_pid"], k["launch_tid"]
        else:
            t1, pid, tid = e["ts_ns"], e["pid"], e["tid"]
        lead[w["rank"]].append((t1, w["event_index"], w["instance_key"], pid, tid))
    window = {}  # (instance_key, rank) -> (t0, t1, pid, tid)
    for rank, rows in lead.items():
        prev = None
        for t1, _, key, pid, tid in sorted(rows, key=lambda r: (r[0], r[1])):  # launch, then the trace's order
            t0 = prev if prev is not None else max((s for s in steps[rank] if s <= t1), default=None)
            window[(key, rank)] = (t0, t1, pid, tid)
            prev = t1
    out = defaultdict(lambda: [0.0, 0.0])  # (late rank, kind, name) -> [late ns, others ns]
    count = defaultdict(int)
    for inst in insts:
        key, last, n = inst["instance_key"], inst["last_rank"], inst["ranks_present"]
        mine = {r: w for (k, r), w in window.items() if k == key}
        if sum(w[0] is not None for w in mine.values()) != n:
            continue
        count[last] += 1
        per = defaultdict(lambda: [0, 0])  # (kind, name) -> [late, others' sum]
        for rank, (t0, t1, pid, tid) in mine.items():
            if not t0 < t1:
                continue
            side = 0 if rank == last else 1
            per[("lead-up", None)][side] += t1 - t0
            for e in events:
                if (e["rank"] == rank and e["ph"] == "X" and e["cat"] in CPU_CATS and e["pid"] == pid
                        and e["tid"] == tid and t0 <= e["ts_ns"] < t1 and not e["name"].startswith("ProfilerStep#")):
                    per[("cpu op", e["name"])][side] += e["dur_ns"] or 0
            for k in kernels:
                if (k["rank"] == rank and k["kind"] != "comm" and k["launch_ts_ns"] is not None
                        and t0 <= k["launch_ts_ns"] < t1):
                    per[("kernel", k["name"])][side] += k["dur_ns"]
        for (kind, name), (late, others) in per.items():
            out[(last, kind, name)][0] += late
            out[(last, kind, name)][1] += others / (n - 1)
    return out, count


def test_why_late_on_the_dlrm_job_equals_a_recomputation_by_hand_with_partitions_of_three(tmp_path, monkeypatch):
    monkeypatch.setattr(tracekit.derive, "FINISH_RANKS", 3)  # 8 ranks: partitions 0-2, 3-5, 6-7
    run = tracekit.ingest([shared_traces() / "param_dlrm_kineto_8rank"], tmp_path / "run", jobs=1)
    assert len(finish_files(tmp_path / "run", "_lead_up_sums")) == 3
    expected, count = why_late_by_hand(run)
    rows = tracekit.report(run, "why_late", per_rank=1000).to_pylist()
    assert {r["rank"] for r in rows} == set(count) and len(count) >= 2  # several late ranks (4, 5, 7)
    # every name the late rank spent longer on than the others (the rest explain none of it), none twice
    assert len(rows) == sum(1 for k, (late, others) in expected.items()
                            if k[0] in count and (k[1] == "lead-up" or late > others))
    for r in rows:
        late, others = expected[(r["rank"], r["kind"], None if r["kind"] == "lead-up" else r["name"])]
        assert r["late_instances"] == count[r["rank"]]
        assert (r["late_ms"], r["others_ms"]) == pytest.approx((late / 1e6, others / 1e6), rel=1e-9, abs=1e-12)


def test_a_partition_out_of_memory_is_split_then_given_more(tmp_path, monkeypatch):
    """43M events on 8 ranks ran the finish's one partition out of its 256 MB and failed the ingest. Here
    the same rows must come out when a partition of several ranks runs out of memory after writing part of
    its rules (split in two, down to one rank) and rank 1 alone runs out at the first budget (4x it)."""
    d = tracekit.derive
    base = d.derive_memory_mb()
    real, calls = d._finish_part, []

    def out_of_memory(run_dir, ranks, file_name, memory_mb=None, made=None):
        calls.append((tuple(ranks), memory_mb))
        real(run_dir, ranks, file_name, memory_mb, made)  # its files written, as a rule before the failing one's
        if len(ranks) > 1 or (ranks == [1] and memory_mb < 4 * base):
            raise d._FinishOutOfMemory("planted: out of memory")

    monkeypatch.setattr(d, "FINISH_RANKS", 2)  # partitions [0, 1] [2, 3] of the 4 planted ranks
    monkeypatch.setattr(d, "_finish_part", out_of_memory)
    planted.test_the_straggler_explanation_names_the_planted_slow_op(tmp_path)  # its planted figures still hold
    # (the two partitions run side by side: their calls interleave)
    assert sorted(calls) == [((0,), base), ((0, 1), base), ((1,), base), ((1,), 4 * base), ((2,), base),
                             ((2, 3), base), ((3,), base)]
    for name in ("step_breakdown", "_lead_up_parts"):  # one file a rank, none left of the failed partitions
        assert finish_files(tmp_path / "run-slow", name) == [f"ranks-{r:07d}-{r:07d}.parquet" for r in range(4)]


def test_a_rank_out_of_memory_at_every_budget_is_one_line(tmp_path, monkeypatch):
    d = tracekit.derive

    def out_of_memory(run_dir, ranks, file_name, memory_mb=None, made=None):
        raise d._finish_fail(run_dir, ranks[0], ranks[-1])("step_breakdown", d.duckdb.OutOfMemoryException(
            "Out of Memory Error: could not allocate block of size 256.0 KiB (244.0 MiB/244.1 MiB used)"))

    monkeypatch.setattr(d, "FINISH_RANKS", 1)
    monkeypatch.setattr(d, "_finish_part", out_of_memory)
    with pytest.raises(tracekit.TracekitError) as info:
        hand.test_a_hand_worked_timeline(tmp_path)
    msg = str(info.value)
    assert "could not derive its step_breakdown (rank 0): Out of Memory Error" in msg
    assert "TRACEKIT_DERIVE_MEMORY_MB" in msg and "bug" not in msg
    # it names the input file, not the version being built, and no --rederive for a run not made yet
    assert msg.startswith(str(tmp_path)) and ".v-" not in msg and "--rederive" not in msg
    assert msg.endswith("set it higher and run the same command again")


def one_rank_run(tmp_path):
    """hand_run's rank 0 without its allreduce, alone in its run (times in us)."""
    from tests.conftest import dist, write_trace
    from tests.tracegen import kernel, step

    evs = [step(1, 0, 100), step(2, 100, 100)]
    evs += kernel("volta_sgemm_128x32_nt", 10, 20)                                         # gemm [10, 30)
    evs += kernel("void at::native::vectorized_elementwise_kernel<4>", 25, 15, stream=8)  # [25, 40)
    evs += [{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 9, "ts": 85, "dur": 5,
             "args": {"stream": 9}}]                                                       # [85, 90)
    evs += kernel("flash_fwd_kernel", 95, 10)                                              # [95, 105)
    evs += kernel("triton_poi_fused_add_0", 150, 10)                                       # [150, 160)
    evs += kernel("my_custom_kernel", 160, 10)                                             # [160, 170)
    evs += kernel("late_kernel", 210, 10, launch=(209, 1))                                 # outside every step
    write_trace(tmp_path / "rank0.json", evs, header=dist(0, world=1))
    return tracekit.ingest([tmp_path / "rank0.json"], tmp_path / "run", jobs=1)


def assert_one_rank_figures(run):
    got = {(r["rank"], r["step"]): r for r in tracekit.report(run, "breakdown").to_pylist()}
    cols = ("timeline_ms", "gemm_ms", "attention_ms", "elementwise_ms", "other_ms", "comm_part_ms", "memory_part_ms",
            "wait_ms", "starved_ms", "outside_ms")
    expected = {  # as test_breakdown's rank 0, with [50, 80) idle: starved [0, 10) [40, 85) [90, 95)
        (0, 1): (100, 17.5, 5, 12.5, 0, 0, 5, 0, 60, 0),
        (0, 2): (100, 0, 5, 10, 10, 0, 0, 0, 75, 0),
        (0, -1): (20, 0, 0, 0, 10, 0, 0, 0, 0, 10),
    }
    assert set(got) == set(expected)
    for key, exp in expected.items():
        assert tuple(got[key][c] for c in cols) == pytest.approx(tuple(v * 1e-3 for v in exp)), key


def test_a_one_rank_run_derives_its_finish_beside_its_facts(tmp_path, monkeypatch):
    """A run of one rank derives the finish on the connection that holds its facts (no second connection
    reading back the files just written): finish_run's partitions never run, the figures are the hand-worked ones."""
    d = tracekit.derive
    calls = []
    real = d._finish_part
    monkeypatch.setattr(d, "_finish_part", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    assert_one_rank_figures(one_rank_run(tmp_path))
    assert calls == []
    assert finish_files(tmp_path / "run", "step_breakdown") == ["all.parquet"]


def test_a_one_rank_run_whose_finish_runs_out_of_memory_beside_its_facts_derives_it_again(tmp_path, monkeypatch):
    """Out of memory on the facts' connection (a finish rule, beside the facts and then alone), the finish is
    given up there, what it wrote removed, and done again by finish_run on a connection of its own: the same
    hand-worked figures, one file each; the facts of that pass are all written."""
    import duckdb

    import tracekit.materialize as m

    d = tracekit.derive
    real_write, real_create, real_part, calls, planted = m._write_rule, m._create, d._finish_part, [], []

    def plant(name):
        if name == "step_breakdown" and not calls:  # on the map connection, however it runs there
            planted.append(name)
            raise duckdb.OutOfMemoryException("planted: out of memory")

    def write_rule(cur, name, path):  # (the map connection writes each stored fact straight to its file)
        plant(name)
        real_write(cur, name, path)

    def create(cur, name):  # (and, out of memory alone so, derives it again as a table)
        plant(name)
        real_create(cur, name)

    monkeypatch.setattr(m, "_write_rule", write_rule)
    monkeypatch.setattr(m, "_create", create)
    monkeypatch.setattr(d, "_finish_part", lambda *a, **k: calls.append(a[1]) or real_part(*a, **k))
    assert_one_rank_figures(one_rank_run(tmp_path))
    # beside the other rules, alone, alone as a table: given up, and finish_run does it
    assert planted == ["step_breakdown"] * 3 and calls == [[0]]
    for name in ("step_breakdown", "_lead_up_parts"):
        assert finish_files(tmp_path / "run", name) == ["all.parquet"]
    for name in d.FACTS + d.REDUCED:
        assert finish_files(tmp_path / "run", name) == ["all.parquet"], name


def test_compaction_and_the_finish_partition_ranks_alike(tmp_path):
    """One rule: a partition spans at most 256 ranks from its first to its last. Ranks 0, 1, 266, 267 (by
    hand: 0..1 spans 2, 0..266 would span 267) are [0, 1] and [266, 267] for both; compaction made
    ranks-0000000-0000266 and ranks-0000267-0000267 where the finish made [0, 1] and [266, 267]."""
    from tracekit.compact import partition, plan
    d = tmp_path / "facts" / "gpu_kernels"
    d.mkdir(parents=True)
    for r in (0, 1, 266, 267):
        (d / f"rank-{r}.parquet").write_bytes(b"")
    assert [os.path.basename(dest) for _, dest in plan(str(d))] == ["ranks-0000000-0000001.parquet",
                                                                    "ranks-0000266-0000267.parquet"]
    assert partition([0, 1, 266, 267], tracekit.derive.FINISH_RANKS) == [[0, 1], [266, 267]]
    assert tracekit.derive.FINISH_RANKS == 256
