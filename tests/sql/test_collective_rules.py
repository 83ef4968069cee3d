"""The rules that decide a collective's type, size, group and instance, on hand-made traces. Every
expected value is worked out here from what the trace records (shapes, args, times), not taken from
tracekit's output."""

import pytest

import tracekit
from tests.conftest import dist, write_trace
from tests.tracegen import cpu_op, kernel, step


def ingest(tmp_path, traces, world=2, **header):
    for r, evs in traces.items():
        write_trace(tmp_path / f"rank{r}.json", evs, header={**dist(r, world=world), **header})
    return tracekit.ingest([tmp_path], tmp_path / "run", jobs=1)


def rows(run, q):
    return run.sql(q).to_pylist()


def op(name, ts, dur, dims, types):
    return cpu_op(name, ts, dur, **{"Input Dims": dims, "Input type": types})


def test_output_and_input_shapes_give_size_and_group(tmp_path):
    # c10d::_allgather_base_(output, input): output 4 x 1024, input 1024 bf16 -> a group of 4, whatever
    # the world (16) says; the inner nccl op records the input only
    ag = [op("c10d::_allgather_base_", 10, 20, [[4, 1024], [1, 1024], []], ["c10::BFloat16", "c10::BFloat16", ""]),
          op("nccl:_all_gather_base", 12, 15, [[1, 1024]], ["c10::BFloat16"])]
    ag += kernel("ncclDevKernel_AllGather_RING_LL", 30, 8, launch=(14, 1))
    # c10d::_reduce_scatter_base_(output, input): output 256, input 2048 float -> a group of 8
    rs = [op("c10d::_reduce_scatter_base_", 50, 20, [[256], [2048], []], ["float", "float", ""]),
          op("nccl:_reduce_scatter_base", 52, 15, [[2048]], ["float"])]
    rs += kernel("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", 70, 4, launch=(54, 1))
    # an allgather known by its input alone: its output, bytes and busbw need the group size: unknown
    lone = [op("nccl:_all_gather_base", 100, 10, [[512]], ["float"])]
    lone += kernel("ncclDevKernel_AllGather_RING_LL", 110, 4, launch=(101, 1))
    run = ingest(tmp_path, {0: [step(1, 0, 200)] + ag + rs + lone}, world=16)
    got = rows(run, "SELECT collective, group_size, group_size_source, dtype, in_nelems, out_nelems, bytes, "
                    "busbw_gbps FROM collectives ORDER BY ts_ns")
    assert got[0] == {"collective": "allgather", "group_size": 4, "group_size_source": "shapes",
                      "dtype": "bfloat16", "in_nelems": 1024, "out_nelems": 4096, "bytes": 4096 * 2,
                      "busbw_gbps": pytest.approx(8192 / 8000 * 3 / 4)}
    assert got[1] == {"collective": "reduce_scatter", "group_size": 8, "group_size_source": "shapes",
                      "dtype": "float32", "in_nelems": 2048, "out_nelems": 256, "bytes": 2048 * 4,
                      "busbw_gbps": pytest.approx(8192 / 4000 * 7 / 8)}
    assert got[2] == {"collective": "allgather", "group_size": None, "group_size_source": "unknown",
                      "dtype": "float32", "in_nelems": 512, "out_nelems": None, "bytes": None, "busbw_gbps": None}


def test_alltoall_output_from_its_own_shape(tmp_path):
    # uneven splits: output 300 elements, input 400
    evs = [op("c10d::alltoall_base_", 10, 20, [[300], [400], [], []], ["float", "float", "", ""])]
    evs += kernel("ncclDevKernel_SendRecv", 30, 5, launch=(12, 1))
    run = ingest(tmp_path, {0: evs})
    (r,) = rows(run, "SELECT collective, in_nelems, out_nelems, bytes FROM collectives")
    assert r == {"collective": "alltoall", "in_nelems": 400, "out_nelems": 300, "bytes": 1600}


def test_unknown_op_name_falls_through_to_the_kernel(tmp_path):
    evs = [op("c10d::brand_new_collective_", 10, 20, [[64]], ["float"])]
    evs += kernel("ncclDevKernel_AllGather_RING_LL", 30, 5, launch=(12, 1))
    evs += kernel("ncclDevKernel_SendRecv", 40, 5, launch=(39, 2))  # no op at all
    run = ingest(tmp_path, {0: evs})
    got = rows(run, "SELECT collective, meta_source FROM collectives ORDER BY ts_ns")
    assert got == [{"collective": "allgather", "meta_source": "launching CPU op"},
                   {"collective": "sendrecv", "meta_source": "kernel name only"}]
    con = run.con
    assert con.execute("SELECT tk_busbw_factor('sendrecv', NULL), tk_busbw_factor('allreduce', NULL)").fetchone() \
        == (1.0, None)


def test_world_size_is_not_a_group_size(tmp_path):
    # an allreduce with no group anywhere in the trace: bytes are known (allreduce counts its input),
    # the group size is not, so neither is busbw
    evs = [op("nccl:all_reduce", 10, 20, [[1000]], ["float"])]
    evs += kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 30, 5, launch=(12, 1))
    run = ingest(tmp_path, {0: evs}, world=128)
    (r,) = rows(run, "SELECT bytes, group_size, group_size_source, busbw_gbps, algbw_gbps FROM collectives")
    assert r == {"bytes": 4000, "group_size": None, "group_size_source": "unknown", "busbw_gbps": None,
                 "algbw_gbps": pytest.approx(4000 / 5000)}


def gloo_ops(tid=7):
    return [cpu_op("gloo:all_reduce", 10, 5, tid=tid, **{"Input Dims": [[100]], "Input type": ["float"]}),
            cpu_op("gloo:all_gather", 20, 5, tid=tid, **{"Input Dims": [[50]], "Input type": ["float"]})]


def pg(name, desc, ranks):
    return {"pg_name": name, "pg_desc": desc, "backend_config": "cpu:gloo", "pg_size": len(ranks), "ranks": ranks}


def test_gloo_trace_with_one_process_group_attaches_it(tmp_path):
    run = ingest(tmp_path, {0: [step(1, 0, 100)] + gloo_ops()}, world=2)  # no pg_config: unknown
    assert {r["group_size_source"] for r in rows(run, "SELECT group_size_source FROM collectives")} == {"unknown"}
    (tmp_path / "one").mkdir()
    write_trace(tmp_path / "one" / "rank0.json", [step(1, 0, 100)] + gloo_ops(),
                header=dist(0, world=2, backend="gloo", pg_count=1, pg_config=[pg("0", "default_pg", [0, 1])]))
    run = tracekit.ingest([tmp_path / "one"], tmp_path / "one-run", jobs=1)
    got = rows(run, "SELECT collective, pg_name, pg_desc, group_size, group_size_source, pg_ranks, bytes "
                    "FROM collectives ORDER BY ts_ns")
    assert got == [
        {"collective": "allreduce", "pg_name": "0", "pg_desc": "default_pg", "group_size": 2,
         "group_size_source": "pg table", "pg_ranks": "[0, 1]", "bytes": 400},
        {"collective": "allgather", "pg_name": "0", "pg_desc": "default_pg", "group_size": 2,
         "group_size_source": "pg table", "pg_ranks": "[0, 1]", "bytes": 400}]
    by_group = {r["key"] for r in tracekit.report(run, "exposed", by="group").to_pylist()}
    assert by_group == {"default_pg"}


def test_gloo_threads_in_the_config_name_groups(tmp_path):
    # the config says thread 7 serves group "5" (tracekit.profiler.gloo_threads); thread 8 is not listed
    other = [cpu_op("gloo:all_reduce", 30, 2, tid=8, **{"Input Dims": [[7920]], "Input type": ["float"]})]
    write_trace(tmp_path / "rank0.json", [step(1, 0, 100)] + gloo_ops(tid=7) + other,
                header={**dist(0, world=2, backend="gloo"), "tracekit_config": {"gloo_threads": {"7": "5"}}})
    run = tracekit.ingest([tmp_path / "rank0.json"], tmp_path / "run", jobs=1)
    got = rows(run, "SELECT stream, collective, pg_name FROM collectives ORDER BY ts_ns")
    assert [(r["stream"], r["collective"], r["pg_name"]) for r in got] == [
        (7, "allreduce", "5"), (7, "allgather", "5"), (8, "allreduce", None)]


def test_old_gloo_markers_name_groups_and_are_left_out_of_every_figure(tmp_path):
    # traces of older tracekit: thread 7 ran the marker allreduces of group "5" (size 7919, 1 us each);
    # thread 8 ran a real allreduce of another group, which no marker names: it stays in, unnamed
    marker = [cpu_op("gloo:all_reduce", 1 + i, 1, tid=7, **{"Input Dims": [[7919]], "Input type": ["float"]})
              for i in range(2)]
    other = [cpu_op("gloo:all_reduce", 30, 2, tid=8, **{"Input Dims": [[7920]], "Input type": ["float"]})]
    evs = [step(1, 0, 100)] + marker + gloo_ops(tid=7) + other
    write_trace(tmp_path / "rank0.json", evs,
                header={**dist(0, world=2, backend="gloo"), "tracekit_config": {"markers": {"7919": "5"}}})
    run = tracekit.ingest([tmp_path / "rank0.json"], tmp_path / "run", jobs=1)
    got = rows(run, "SELECT stream, collective, pg_name FROM collectives ORDER BY ts_ns")
    assert [(r["stream"], r["pg_name"]) for r in got] == [(7, "5"), (7, "5"), (8, None)]
    # comm: the job's three ops, 5 + 5 + 2 us apart from each other; the two 1 us markers are not in it
    (s,) = tracekit.report(run, "summary").to_pylist()
    assert (s["comm_ms"], s["collectives"]) == (pytest.approx(0.012), 3)


def two_ranks(tmp_path, r0, r1):
    return ingest(tmp_path, {0: [step(1, 0, 1000)] + r0, 1: [step(1, 0, 1000)] + r1})


def ar(ts, nelems, dur=10):
    return kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", ts, dur, launch=(ts - 1, 1),
                  **{"Collective name": "allreduce", "In msg nelems": nelems, "Out msg nelems": nelems,
                     "dtype": "Float"})


def test_send_and_recv_are_one_point_to_point_instance(tmp_path):
    p2p = {"In msg nelems": 256, "Out msg nelems": 256, "dtype": "Float", "Src Rank": 0, "Dst Rank": 1}
    send = kernel("ncclDevKernel_SendRecv", 100, 10, launch=(99, 1), **{"Collective name": "send", **p2p})
    recv = kernel("ncclDevKernel_SendRecv", 104, 6, launch=(90, 1), **{"Collective name": "recv", **p2p})
    run = two_ranks(tmp_path, send, recv)
    (i,) = rows(run, "SELECT collective, ranks_present, expected_ranks, mismatch, status, start_skew_ns, "
                     "transfer_ns, transfer_busbw_gbps, last_rank FROM collective_instances")
    assert i == {"collective": "sendrecv", "ranks_present": 2, "expected_ranks": 2, "mismatch": None,
                 "status": "clean", "start_skew_ns": 4000, "transfer_ns": 6000,
                 "transfer_busbw_gbps": pytest.approx(1024 / 6000), "last_rank": 1}


def test_order_matching_aligns_a_window_that_starts_later(tmp_path):
    # rank 1's profile starts after the first allreduce: its first row is the 8192-element one
    r0 = ar(10, 4096) + ar(50, 8192) + ar(90, 4096)
    r1 = ar(52, 8192) + ar(95, 4096)
    run = two_ranks(tmp_path, r0, r1)
    got = rows(run, "SELECT bytes, ranks, status, last_rank, start_skew_ns FROM collective_instances "
                    "ORDER BY first_start_ns")
    assert got == [
        {"bytes": 16384, "ranks": "0", "status": "before window", "last_rank": 0, "start_skew_ns": 0},
        {"bytes": 32768, "ranks": "0,1", "status": "clean", "last_rank": 1, "start_skew_ns": 2000},
        {"bytes": 16384, "ranks": "0,1", "status": "clean", "last_rank": 1, "start_skew_ns": 5000}]
    s = {r["rank"]: r for r in rows(run, "SELECT * FROM stragglers")}
    assert s[1]["times_last"] == 2 and s[1]["caused_wait_ns"] == 7000 and s[0]["own_wait_ns"] == 7000


def test_order_matching_flags_a_group_it_cannot_align(tmp_path):
    # the ranks' sequences disagree after alignment: no instance of the group is trusted
    run = two_ranks(tmp_path, ar(10, 4096) + ar(50, 8192), ar(12, 4096) + ar(52, 1024))
    assert {r["status"] for r in rows(run, "SELECT status FROM collective_instances")} == {"unaligned"}
    assert rows(run, "SELECT * FROM stragglers") == []
    from tracekit.table_meta import note_of
    assert note_of(tracekit.report(run, "skew")).startswith("left out: 2 unaligned")


def test_a_launch_on_a_step_boundary_belongs_to_one_step(tmp_path):
    evs = [step(1, 0, 100), step(2, 100, 100)] + kernel("gemm", 100, 10, launch=(100, 1))
    run = ingest(tmp_path, {0: evs})
    assert rows(run, "SELECT step FROM gpu_kernels") == [{"step": 2}]


def test_per_step_overlap_and_exposure_by_hand(tmp_path):
    # step 1 [0, 100) launches an allreduce that runs [50, 150]; step 2 [100, 200) launches compute
    # [120, 180]; a compute kernel launched at 250, outside every step, runs [260, 270].
    evs = [step(1, 0, 100), step(2, 100, 100)]
    k, rt = ar(50, 1024, dur=100)
    evs += [k, dict(rt, ts=40)]  # launched at 40 (one call: the kernel and its launch share a correlation id)
    evs += kernel("gemm", 120, 60, launch=(110, 1)) + kernel("late", 260, 10, launch=(250, 1))
    run = ingest(tmp_path, {0: evs})
    us = 1000
    got = {r["step"]: (r["comm_ns"], r["compute_ns"], r["overlap_ns"], r["exposed_comm_ns"])
           for r in rows(run, "SELECT * FROM comm_overlap")}
    assert got == {None: (100 * us, 70 * us, 30 * us, 70 * us),  # overlap [120, 150]
                   1: (100 * us, 0, 30 * us, 70 * us),  # the allreduce is step 1's, all of it
                   2: (0, 60 * us, 0, 0),
                   -1: (0, 10 * us, 0, 0)}
    by_step = {r["key"]: r["exposed_ms"] for r in tracekit.report(run, "exposed", by="step").to_pylist()}
    assert by_step == {"1": pytest.approx(0.070)}
    # window, busy and idle by time. The trace's span is [50, 270]: 220 us, busy [50, 180] + [260, 270] =
    # 140. Step 1's window [0, 100) (to step 2's start) holds [50, 100): 50 us, all busy; step 2's, the
    # last, [100, 200) (its CPU end 200 is later than its compute's end 180): 100 us, busy [100, 180] = 80;
    # the rest, [200, 270]: 70 us, busy [260, 270] = 10. Per-step idle adds up to the trace's 80.
    got = {r["step"]: (r["window_ns"], r["busy_ns"], r["idle_ns"]) for r in rows(run, "SELECT * FROM comm_overlap")}
    assert got == {None: (220 * us, 140 * us, 80 * us), 1: (50 * us, 50 * us, 0), 2: (100 * us, 80 * us, 20 * us),
                   -1: (70 * us, 10 * us, 60 * us)}


def test_send_and_recv_without_peers_pair_in_a_two_rank_group(tmp_path):
    # Gloo's send/recv name no peer; in a group of two ranks the peer is the other rank. A 1F1B pipeline
    # of 2 micro-batches: stage 0 sends F1, F2 then receives B1, B2; stage 1 receives F1, sends B1,
    # receives F2, sends B2. By position alone the second send of stage 0 would meet a send.
    cfg = [pg("0", "default_pg", [0, 1])]

    def p2p(name, ts):
        return cpu_op(f"gloo:{name}", ts, 1, tid=7, **{"Input Dims": [[64]], "Input type": ["float"]})
    r0 = [p2p("send", 10), p2p("send", 20), p2p("recv", 40), p2p("recv", 60)]
    r1 = [p2p("recv", 11), p2p("send", 39), p2p("recv", 41), p2p("send", 59)]
    for r, evs in ((0, r0), (1, r1)):
        write_trace(tmp_path / f"rank{r}.json", [step(1, 0, 100)] + evs,
                    header=dist(r, world=2, backend="gloo", pg_count=1, pg_config=cfg))
    run = tracekit.ingest([tmp_path], tmp_path / "run", jobs=1)
    got = rows(run, "SELECT collective, ranks, status, first_start_ns, start_skew_ns FROM collective_instances "
                    "ORDER BY first_start_ns")
    # F1 (10/11), F2 (20/41), B1 (39/40), B2 (59/60)
    assert [(r["collective"], r["ranks"], r["status"], r["first_start_ns"], r["start_skew_ns"]) for r in got] == [
        ("sendrecv", "0,1", "clean", 10000, 1000), ("sendrecv", "0,1", "clean", 20000, 21000),
        ("sendrecv", "0,1", "clean", 39000, 1000), ("sendrecv", "0,1", "clean", 59000, 1000)]


def test_ties_for_last_follow_one_rule_everywhere(tmp_path):
    # three ranks, three allreduces (group of 3 by order). Starts (us):
    #   #1: rank 0 at 10, ranks 1 and 2 both at 14  -> tied last: 1 and 2; the rule names rank 1
    #   #2: rank 0 at 50, rank 1 at 53, rank 2 at 51 -> last 1; first 0
    #   #3: rank 0 at 95, rank 1 at 90, rank 2 at 90 -> last 0; ranks 1 and 2 tied first: rank 1
    starts = {0: (10, 50, 95), 1: (14, 53, 90), 2: (14, 51, 90)}
    traces = {r: [step(1, 0, 1000)] + [e for t in ts for e in ar(t, 1024)] for r, ts in starts.items()}
    run = ingest(tmp_path, traces, world=3)
    inst = rows(run, "SELECT last_rank, last_tied, total_wait_ns FROM collective_instances ORDER BY first_start_ns")
    assert inst == [{"last_rank": 1, "last_tied": 2, "total_wait_ns": 4000},
                    {"last_rank": 1, "last_tied": 1, "total_wait_ns": 3000 + 2000},
                    {"last_rank": 0, "last_tied": 1, "total_wait_ns": 5000 + 5000}]
    waits = rows(run, "SELECT rank, is_last FROM collective_waits WHERE is_last ORDER BY ts_ns, rank")
    assert [w["rank"] for w in waits] == [1, 1, 0]  # one last rank per instance, the same as last_rank
    s = {r["rank"]: r for r in rows(run, "SELECT * FROM stragglers")}
    assert {r: (v["instances"], v["times_last"], v["times_first"], v["caused_wait_ns"]) for r, v in s.items()} == {
        0: (3, 1, 2, 10000), 1: (3, 2, 1, 4000 + 5000), 2: (3, 0, 0, 0)}
    assert s[1]["last_share_pct"] == pytest.approx(200 / 3)


def gloo_rank(issue, slow=None):
    """A Gloo rank worked out by hand (us): the training thread (tid 1) issues c10d::allreduce_ [a, a+2] at
    each a of ``issue``; Gloo's worker thread (tid 7) runs its gloo:all_reduce from a+5 until 20 us after the
    later rank's a+5 (LATER_START below); ``slow``: (start, dur) of an op of the training thread."""
    evs = [step(1, 0, 1000)]
    for a, later in zip(issue, LATER_START, strict=True):
        evs.append(cpu_op("c10d::allreduce_", a, 2))
        evs.append(cpu_op("gloo:all_reduce", a + 5, later + 20 - (a + 5), tid=7,
                          **{"Input Dims": [[100]], "Input type": ["float"]}))
    if slow:
        evs.append(cpu_op("slow_op", *slow))
    return evs


LATER_START = (105, 605, 705)  # each all-reduce's later start: rank 1's (its second is late: slow_op before it)


def test_a_gloo_ranks_lead_ups_are_its_training_threads(tmp_path):
    """A Gloo op runs on Gloo's worker thread; the op that issued it, and what delayed that, on the training
    thread. Rank 1 runs slow_op [250, 550] before issuing its second all-reduce at 600 (rank 0 at 300): it
    is last there, and why_late must name slow_op. Its lead-up is the training thread's from its previous
    issue (100) to this one (600): 500 us against rank 0's 200 (100 to 300); in them slow_op 300 us against
    none. (On the worker's thread the lead-ups held only the Gloo ops, and why_late named nothing.)"""
    run = ingest(tmp_path, {0: gloo_rank((100, 300, 700)), 1: gloo_rank((100, 600, 700), slow=(250, 300))})
    ups = rows(run, "SELECT rank, tid, t0_ns, t1_ns FROM _lead_ups ORDER BY rank, t1_ns")
    assert ups == [{"rank": r, "tid": 1, "t0_ns": t0 * 1000, "t1_ns": t1 * 1000}
                   for r, issue in ((0, (100, 300, 700)), (1, (100, 600, 700)))
                   for t0, t1 in zip((0,) + issue[:-1], issue, strict=True)]
    late = [(r["rank"], r["kind"], r["name"], r["late_ms"], r["others_ms"])
            for r in tracekit.report(run, "why_late").to_pylist()]
    # (the other two all-reduces start together on both ranks: a tie goes to the lowest rank, rank 0, listed
    # after rank 1 for the waiting it caused, none)
    assert late[:2] == [(1, "lead-up", "from the previous collective's launch (or the step's start) to this one's",
                         0.5, 0.2), (1, "cpu op", "slow_op", 0.3, 0.0)]
    assert [x[:2] for x in late[2:]] == [(0, "lead-up")]


def test_gloo_ops_without_as_many_c10d_ops_keep_the_workers_thread(tmp_path):
    """Where the rank's c10d ops and Gloo ops do not pair one for one (an op issued before the profile
    began: its Gloo op is in the trace, its c10d op is not), the lead-ups stay on the worker's thread."""
    r0 = [e for e in gloo_rank((100, 300, 700)) if not (e["name"] == "c10d::allreduce_" and e["ts"] == 100)]
    run = ingest(tmp_path, {0: r0, 1: gloo_rank((100, 600, 700))})
    assert {(r["rank"], r["tid"]) for r in rows(run, "SELECT DISTINCT rank, tid FROM _lead_ups")} == {(0, 7), (1, 1)}


def test_gloo_ops_run_out_of_their_issue_order_are_not_paired(tmp_path):
    """Two groups, each with worker threads of its own (tids 7 and 8: group 0's all-reduces; 9: group 1's
    all-to-all). Each rank issues three all-reduces at 100, 120 and 140 us, then the all-to-all (rank 0 at
    200, rank 1 at 410, after slow_op); group 0's workers are behind, so its third all-reduce runs at 600, after
    the all-to-all. In order of start the third c10d op (an all-reduce) meets the all-to-all: the pairs
    disagree on the collective, so the ranks' lead-ups stay on the workers' threads (paired in that order,
    each Gloo op would have taken another op's issue time, and why_late another story; a review found it)."""
    def rank(a2a, slow=None):
        evs = [step(1, 0, 1000)]
        for a, (start, tid) in zip((100, 120, 140), ((105, 7), (125, 8), (600, 7)), strict=True):
            evs.append(cpu_op("c10d::allreduce_", a, 2, **{"Input Dims": [[[100]]], "Input type": ["float"]}))
            evs.append(cpu_op("gloo:all_reduce", start, 20, tid=tid,
                              **{"Input Dims": [[100]], "Input type": ["float"]}))
        evs.append(cpu_op("c10d::alltoall_base_", a2a, 2, **{"Input Dims": [[64], [64]], "Input type": ["float"]}))
        evs.append(cpu_op("gloo:all_to_all", a2a + 5, 415 + 20 - (a2a + 5), tid=9,
                          **{"Input Dims": [[64]], "Input type": ["float"]}))
        return evs + ([cpu_op("slow_op", *slow)] if slow else [])

    run = ingest(tmp_path, {0: rank(200), 1: rank(410, slow=(150, 250))})
    got = rows(run, "SELECT rank, tid, t1_ns FROM _lead_ups ORDER BY rank, t1_ns")
    assert [(r["rank"], r["tid"], r["t1_ns"] // 1000) for r in got] == [
        (r, tid, t) for r, a2a in ((0, 200), (1, 410))
        for t, tid in sorted([(105, 7), (125, 8), (a2a + 5, 9), (600, 7)])]


def _steps3(evs):
    return [step(i + 1, 1000 * (i + 1), 1000) for i in range(3)] + evs


def test_order_matching_skips_a_kernel_left_from_before_the_profile(tmp_path):
    """Two ranks on one host (one clock), three steps [1000k, 1000k+1000) (k = 1, 2, 3), one allreduce each:
    rank 0's kernel from
    1000k+100, rank 1's 20, 50 and 10 us later, all ending at 1000k+600. Rank 1's trace also holds the tail
    of the allreduce before its profile began: a kernel [950, 1010) with no launch, before its first runtime
    call and its first step, whose counterpart on rank 0 ended before rank 0's profile. Aligned by order
    from each rank's first row of the collective, it paired with rank 0's step-1 allreduce and every
    instance after it was one off: rank 0 read last three times, waits of 550-1250 us (an attacker's case).
    Each instance is of one step on both ranks: rank 1 last, by 20, 50 and 10 us; the tail has no partner."""
    r0 = [e for k in (1, 2, 3) for e in ar(1000 * k + 100, 4096, dur=500)]
    r1 = kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 950, 60,
                **{"Collective name": "allreduce", "In msg nelems": 4096, "Out msg nelems": 4096,
                   "dtype": "Float"})[:1]
    for k, d in ((1, 20), (2, 50), (3, 10)):
        r1 += ar(1000 * k + 100 + d, 4096, dur=500 - d)
    run = ingest(tmp_path, {0: _steps3(r0), 1: _steps3(r1)}, hostname="node0")  # one host, one clock
    got = rows(run, "SELECT ranks, status, last_rank, start_skew_ns, total_wait_ns FROM collective_instances "
                    "ORDER BY first_start_ns")
    assert got == [
        {"ranks": "1", "status": "before window", "last_rank": 1, "start_skew_ns": 0, "total_wait_ns": 0},
        {"ranks": "0,1", "status": "clean", "last_rank": 1, "start_skew_ns": 20000, "total_wait_ns": 20000},
        {"ranks": "0,1", "status": "clean", "last_rank": 1, "start_skew_ns": 50000, "total_wait_ns": 50000},
        {"ranks": "0,1", "status": "clean", "last_rank": 1, "start_skew_ns": 10000, "total_wait_ns": 10000}], got
    s = {r["rank"]: r for r in rows(run, "SELECT * FROM stragglers")}
    assert s[1]["times_last"] == 3 and s[1]["caused_wait_ns"] == 80000 and s[0]["own_wait_ns"] == 80000


def test_order_matching_pairs_a_later_window_by_time_on_one_host(tmp_path):
    """Two ranks on one host. Rank 1's profile holds steps 2 and 3 only (its first allreduce is step 2's),
    rank 0's steps 1-3, the
    same allreduce each step (rank 1 50 and 10 us late, kernels ending together): rank 0's step-1 allreduce,
    [1100, 1600), ended before rank 1's first began (2150): no partner of it; aligned on the first row of the
    same collective and size, rank 0's step 1 paired with rank 1's step 2 (skews of 1050 and 1310 us, an
    attacker's case)."""
    r0 = [e for k in (1, 2, 3) for e in ar(1000 * k + 100, 4096, dur=500)]
    r1 = []
    for k, d in ((2, 50), (3, 10)):
        r1 += ar(1000 * k + 100 + d, 4096, dur=500 - d)
    run = ingest(tmp_path, {0: _steps3(r0), 1: [step(i + 1, 1000 * (i + 1), 1000) for i in (1, 2)] + r1},
                 hostname="node0")
    got = rows(run, "SELECT ranks, status, last_rank, start_skew_ns FROM collective_instances ORDER BY first_start_ns")
    assert got == [{"ranks": "0", "status": "before window", "last_rank": 0, "start_skew_ns": 0},
                   {"ranks": "0,1", "status": "clean", "last_rank": 1, "start_skew_ns": 50000},
                   {"ranks": "0,1", "status": "clean", "last_rank": 1, "start_skew_ns": 10000}], got


def test_groups_that_share_a_name_are_told_apart_by_their_ranks(tmp_path):
    """Four ranks, a tensor-parallel allreduce in groups [0, 1] and [2, 3], both recorded as process group "1"
    (a group made by splitting gets the same name on every rank: the name alone does not say which group):
    ranks 0-2's kernels [100, 200), rank 3's from 140. Two instances: [0, 1] with no skew, [2, 3] with rank 3
    last by 40 us. They were one instance of 4 ranks in a group of 2 (missing ranks -2), ranks 0 and 1
    waiting 40 us each for rank 3 (an attacker's case)."""
    def rank(r, ts):
        ranks = "[0, 1]" if r < 2 else "[2, 3]"
        return [step(1, 0, 1000)] + kernel(
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL", ts, 200 - ts, launch=(ts - 1, 1),
            **{"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float",
               "Group size": 2, "Process Group Name": "1", "Process Group Description": "tp",
               "Process Group Ranks": ranks})

    run = ingest(tmp_path, {0: rank(0, 100), 1: rank(1, 100), 2: rank(2, 100), 3: rank(3, 140)}, world=4)
    got = rows(run, "SELECT ranks, ranks_present, status, last_rank, start_skew_ns, total_wait_ns "
                    "FROM collective_instances ORDER BY ranks")
    assert got == [
        {"ranks": "0,1", "ranks_present": 2, "status": "clean", "last_rank": 0, "start_skew_ns": 0, "total_wait_ns": 0},
        {"ranks": "2,3", "ranks_present": 2, "status": "clean", "last_rank": 3, "start_skew_ns": 40000,
         "total_wait_ns": 40000}], got
    s = {r["rank"]: r for r in rows(run, "SELECT * FROM stragglers")}
    assert s[0]["own_wait_ns"] == 0 and s[1]["own_wait_ns"] == 0 and s[3]["caused_wait_ns"] == 40000


def test_a_collective_kernel_of_negative_duration_is_left_out_and_said(tmp_path):
    """Rank 0's second allreduce kernel records a duration of -100 us (a malformed event): it ran no time
    that can be known. Both ranks' first allreduce [1150, 1350) is one clean instance with no skew; the
    second has no trustworthy rank 0 and gives no number (it gave a transfer of -100 us, 130 % exposed, and
    a 100 us clock offset from the bad end; an attacker's case), and doctor names the event."""
    r0 = ar(1150, 4096, dur=200) + ar(2150, 4096, dur=-100)
    r1 = ar(1150, 4096, dur=200) + ar(2150, 4096, dur=200)
    run = ingest(tmp_path, {0: _steps3(r0), 1: _steps3(r1)})
    got = rows(run, "SELECT ranks, status, start_skew_ns, end_skew_ns, transfer_ns FROM collective_instances "
                    "ORDER BY first_start_ns")
    assert got[0] == {"ranks": "0,1", "status": "clean", "start_skew_ns": 0, "end_skew_ns": 0,
                      "transfer_ns": 200000}, got
    assert all(r["status"] != "clean" for r in got[1:]) and all((r["transfer_ns"] or 0) >= 0 for r in got), got
    assert rows(run, "SELECT count(*) AS n FROM collectives WHERE rank = 0") == [{"n": 1}]
    assert {r["rank"]: r["own_wait_ns"] for r in rows(run, "SELECT * FROM stragglers")} == {0: 0, 1: 0}
    doc = [r for r in tracekit.report(run, "doctor").to_pylist() if "negative" in r["finding"]]
    assert doc and doc[0]["severity"] == "warning" and doc[0]["ranks"] == "0", doc
    # rank 0's one allreduce of known length, 200 us, none of it under compute: 100 % exposed (it read 130 %)
    (e,) = [r for r in tracekit.report(run, "exposed", by="rank").to_pylist() if r["key"] == "0"]
    assert e["kernel_ms"] == pytest.approx(0.2) and e["exposed_ms"] == pytest.approx(0.2), e


def test_a_groups_ranks_written_with_other_spacing_are_one_group(tmp_path):
    """One group "0" of ranks 0 and 1, rank 1 writing its ranks "[0,1]", rank 0 "[0, 1]"; the allreduce at
    100 and 130 on both ranks ending at 200: one instance, rank 1 last by 30 us (split by the text, each rank
    a single-rank instance: an attacker's case)."""
    def rank(r):
        return [step(1, 0, 1000)] + kernel(
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 100 + 30 * r, 100 - 30 * r, launch=(99 + 30 * r, 1),
            **{"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float",
               "Group size": 2, "Process Group Name": "0", "Process Group Description": "default_pg",
               "Process Group Ranks": "[0, 1]" if r == 0 else "[0,1]"})

    run = ingest(tmp_path, {0: rank(0), 1: rank(1)})
    assert rows(run, "SELECT ranks, status, last_rank, start_skew_ns FROM collective_instances") == [
        {"ranks": "0,1", "status": "clean", "last_rank": 1, "start_skew_ns": 30000}]


def test_a_broadcasts_root_may_finish_before_its_peer_starts(tmp_path):
    """Two ranks on one host, steps 1-3 [1000k, 1000k+1000), a 4 KB broadcast each step from rank 0: its kernel
    [1000k+100, 1000k+110) ends before rank 1's [1000k+500, 1000k+510) begins (an eager message into the
    peer's posted buffer). Instance k is step k on both ranks, rank 1 last by 400 us; the rule that a
    partner does not end before the anchor's row begins holds for all-reduce, all-gather and reduce-scatter
    only (it paired every broadcast one step off: an attacker's case)."""
    def bcast(ts):
        return kernel("ncclDevKernel_Broadcast_RING_LL", ts, 10, launch=(ts - 1, 1),
                      **{"Collective name": "broadcast", "In msg nelems": 1024, "Out msg nelems": 1024,
                         "dtype": "Float"})

    run = ingest(tmp_path, {r: _steps3([e for k in (1, 2, 3) for e in bcast(1000 * k + (100 if r == 0 else 500))])
                            for r in (0, 1)}, hostname="node0")
    got = rows(run, "SELECT ranks, status, last_rank, start_skew_ns FROM collective_instances ORDER BY first_start_ns")
    assert got == [{"ranks": "0,1", "status": "clean", "last_rank": 1, "start_skew_ns": 400000}] * 3, got
