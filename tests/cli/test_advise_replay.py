"""advise's savings by replay, on a hand-made 4-rank GPU job whose timeline is worked out below: two ranks
share the lateness (each is last at some of the all-reduces), so one finding must name both, and every
finding carries a saving, ranked by it (issue 31, items 1 and 2)."""

import pytest

import tracekit
from tests.conftest import dist, write_trace
from tests.tracegen import cpu_op, kernel, step

NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
ARGS = {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float",
        "Group size": 4, "Process Group Name": "0", "Process Group Description": "default_pg",
        "Process Group Ranks": "[0, 1, 2, 3]"}
# the CPU of ranks 1 and 2 idles (no op) this long before launching the k-th all-reduce of a step, us;
# rank 2 is the later at k = 0 and 2, rank 1 at k = 1: each is last at some instances, neither at all
IDLE = {1: (1000, 1010, 1000), 2: (1010, 1000, 1010)}
GEMM_US, TRANSFER_US = 200, 100


def shared_lateness_job(tmp_path):
    """Per rank and iteration k (3 a step, 2 steps), from the iteration's start c: aten::mm [c, c+100]
    launches a GEMM at c+50 (it runs [c+60, c+260]); after IDLE[r][k] us, c10d::allreduce_ [a, a+20]
    launches the all-reduce at a+10 on the GEMM's stream; it starts at max(a+20, c+260) (its arrival) and
    ends TRANSFER_US after the last rank's arrival; cudaStreamSynchronize waits for it (until its end + 5);
    the next iteration starts 10 us after the end."""
    evs = {r: [] for r in range(4)}
    t = 0.0
    for s in (1, 2):
        start = t
        for k in range(3):
            a = {r: t + 100 + IDLE.get(r, (0, 0, 0))[k] for r in range(4)}
            arrive = {r: max(a[r] + 20, t + 60 + GEMM_US) for r in range(4)}
            end = max(arrive.values()) + TRANSFER_US
            for r in range(4):
                evs[r].append(cpu_op("aten::mm", t, 100))
                evs[r] += kernel("ampere_sgemm_128x64_nn", t + 60, GEMM_US, launch=(t + 50, 1))
                evs[r].append(cpu_op("c10d::allreduce_", a[r], 20))
                evs[r] += kernel(NCCL, arrive[r], end - arrive[r], launch=(a[r] + 10, 1), **ARGS)
                evs[r].append(cpu_op("cudaStreamSynchronize", a[r] + 20, end + 5 - (a[r] + 20), cat="cuda_runtime"))
            t = end + 10
        for r in range(4):
            evs[r].append(step(s, start, t - start))
    for r in range(4):
        (tmp_path / "t").mkdir(exist_ok=True)
        write_trace(tmp_path / "t" / f"rank{r}.json", evs[r], header=dist(r, world=4))
    return tracekit.ingest([tmp_path / "t"], tmp_path / "run", jobs=1)


def test_two_ranks_sharing_the_lateness_are_one_finding(tmp_path):
    run = shared_lateness_job(tmp_path)
    from tracekit.commands.advise import advise

    rows = advise(run).to_pylist()
    late = [r for r in rows if "late" in r["finding"] or "straggler" in r["finding"]]
    assert len(late) == 1 and rows[0] is late[0], rows
    assert rows[0]["finding"] == "late ranks 1, 2 (host idle)"  # their threads run no op before the launch
    # at every all-reduce the later of ranks 1 and 2 arrives at c + 100 + 1010 + 20, the others at c + 260:
    # 870 us late; at the median rank's pace all arrive at c + 260: 3 x 870 us a step sooner
    assert rows[0]["saving_ms"] == pytest.approx(3 * (100 + 1010 + 20 - 260) / 1e3, rel=0.02)


def test_every_finding_carries_a_saving_ranked_by_it(tmp_path):
    run = shared_lateness_job(tmp_path)
    from tracekit.commands.advise import advise

    rows = [r for r in advise(run).to_pylist() if not r["finding"].startswith("trace hygiene")]
    assert rows and all(r["saving_ms"] is not None and r["saving_ms"] > 0 for r in rows), rows
    assert [r["saving_ms"] for r in rows] == sorted((r["saving_ms"] for r in rows), reverse=True)
    # the replay gives back the measured step by construction: its error is no check, and not printed
    assert all("replay_error_pct" not in r for r in rows)
    (comm,) = [r for r in rows if r["finding"] == "exposed communication: allreduce"]
    # hidden, each all-reduce's 100 us transfer no longer holds the synchronize: 3 x 100 us a step
    assert comm["saving_ms"] == pytest.approx(3 * TRANSFER_US / 1e3, rel=0.02)
    # nothing computes during the transfers: exposed, 3 x 100 us a step, is the saving; nothing to reconcile
    assert "more than its exposed" not in comm["evidence"]
    assert "default_pg" in comm["where"]


@pytest.mark.slow
def test_whatif_fix_rank_replays_each_ranks_step(tmp_path, capsys):
    import json

    from tracekit.cli.main import main

    shared_lateness_job(tmp_path)
    capsys.readouterr()
    assert main(["whatif", str(tmp_path / "run"), "--fix-rank", "1", "--fix-rank", "2", "--format", "json"]) == 0
    rows = {r["rank"]: r for r in json.loads(capsys.readouterr().out)}
    assert sorted(rows) == [0, 1, 2, 3]
    # every rank's step as the timeline above has it: 3 iterations of (1010 + 100 + 20) + 100 + 10 us,
    # the last one's 10 us gap after the step excepted; with ranks 1 and 2 at the others' pace, 870 us
    # less per iteration (test_two_ranks_sharing_the_lateness_are_one_finding works it out)
    measured = (3 * (100 + 1010 + 20 + TRANSFER_US + 10)) / 1e3
    for r in rows.values():
        assert r["measured_ms"] == pytest.approx(measured, abs=0.002)
        assert r["change_ms"] == pytest.approx(-3 * 0.870, rel=0.02)
    assert main(["whatif", str(tmp_path / "run"), "--fix-rank", "9"]) == 2  # README: naming what is not there
    assert "no rank 9 in the replay" in capsys.readouterr().err
    assert main(["whatif", str(tmp_path / "run"), "--overlap", "PP"]) == 2
    assert "no group 'PP' with matched collectives" in capsys.readouterr().err
    assert main(["whatif", str(tmp_path / "run"), "--overlap", "default_pg"]) == 0
    out = capsys.readouterr()
    assert "group default_pg overlapped" in out.err + out.out


def test_overlap_takes_a_role_and_a_plan_flag_is_refused_beside_a_counterfactual(capsys):
    """A new user's reading of whatif --help: `--overlap DP` named the role advise prints ('default_pg (DP,
    recorded in the traces' config)') and failed; `--fix-rank 1 --tp 2` dropped --tp without a word."""
    import pathlib

    from tracekit.cli.main import main

    ddp = str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "traces" / "ddp")
    assert main(["whatif", ddp, "--overlap", "default_pg", "--format", "csv"]) == 0
    by_name = capsys.readouterr().out
    assert main(["whatif", ddp, "--overlap", "DP", "--format", "csv"]) == 0  # the traces' config: DP is default_pg
    assert capsys.readouterr().out == by_name
    assert main(["whatif", ddp, "--fix-rank", "1", "--tp", "2"]) != 0
    err = capsys.readouterr().err
    assert "--tp" in err and len(err.strip().splitlines()) == 1


def test_above_the_graphs_cap_advise_says_so_and_sizes_by_its_rules(tmp_path, monkeypatch):
    """A run of more events than the graph is built for (graph/shared.py MAX_EVENTS: 13.6M events at 4,096
    ranks) is not replayed whole by advise: its findings come from the rules, and its note says why."""
    from tracekit.commands.advise import advise
    from tracekit.graph import shared
    from tracekit.table_meta import NOTE_KEY

    run = shared_lateness_job(tmp_path)
    monkeypatch.setattr(shared, "MAX_EVENTS", 10)
    table = advise(run)
    note = table.schema.metadata[NOTE_KEY].decode()
    assert "built on demand" in note and "tracekit report RUN replay" in note, note
    assert "replay_error_pct" not in table.column_names


@pytest.mark.parametrize("factor", [0.0, -1.0, float("nan"), float("inf")])
def test_a_speedup_that_is_not_a_finite_positive_factor_is_refused(tmp_path, factor):
    """--comm-speedup 0 once fell through to the plan whatif (0 is falsy) and nan printed a numpy warning
    and 'transfers nanx faster' with a number (a reviewer's find)."""
    from tracekit.errors import TracekitError

    run = shared_lateness_job(tmp_path)
    with pytest.raises(TracekitError, match="give a finite factor of at least 0.001"):
        tracekit.whatif(run, comm_speedup=factor)


def test_advise_and_whatif_give_one_saving_for_one_change(tmp_path):
    """The late ranks' finding names the whatif command that replays the same change, and the two print
    the same saving (issue 37, item 6: advise's 111 ms against whatif's 130.5 and 124.1 for the same ranks)."""
    import re

    from tracekit.commands.advise import advise
    from tracekit.table_meta import note_of

    run = shared_lateness_job(tmp_path)
    (late,) = [r for r in advise(run).to_pylist() if r["finding"].startswith("late")]
    assert "tracekit whatif RUN --fix-rank 1 --fix-rank 2" in late["evidence"]
    note = note_of(tracekit.whatif(run, fix_ranks=[1, 2]))
    change = float(re.search(r"predicted [\d,.]+ ms \(([-+][\d,.]+) ms against", note).group(1).replace(",", ""))
    assert -change == pytest.approx(late["saving_ms"], abs=0.0005)


def test_advise_prints_one_step_and_takes_every_percent_of_it(tmp_path):
    """Issue 37, item 8: advise's note gave the mean timeline of a rank's step and the replayed job step,
    and its percents were of one or the other. The job's step by hand: 2 steps of 3 iterations of
    (100 + 1010 + 20 + 100 + 10) us, the second step's last 10 us after its work (1230 x 6 - 10) / 2."""
    import re

    from tracekit.commands.advise import advise
    from tracekit.table_meta import note_of

    table = advise(shared_lateness_job(tmp_path))
    note = note_of(table)
    steps = re.findall(r"([\d,]+\.\d+) ms", note.split(";")[0])
    assert len(steps) == 1 and "the job's step" in note, note
    job = float(steps[0].replace(",", ""))
    assert job == pytest.approx(3 * 1240 / 1e3, abs=0.001)
    for r in table.to_pylist():
        if r["saving_ms"] is not None:
            assert r["saving_pct"] == pytest.approx(100 * r["saving_ms"] / job, rel=1e-3)


def test_the_late_rank_finding_cites_why_late_only_for_an_op_why_late_lists(tmp_path):
    """On the FSDP example (Gloo) advise named rank 0 host-bound in aten::clone and said "tracekit report
    RUN why_late names the ops", where why_late listed no op for rank 0: its lead-ups were Gloo's worker
    thread's. They are the training thread's now (tests/sql/test_collective_rules.py works one out by
    hand): why_late lists aten::clone for rank 0, and advise quotes it from there, never a collective's
    own op (c10d::_allgather_base_ is longer on rank 0 too: that is its waiting, not its work)."""
    import pathlib
    import re

    from tracekit.commands.advise import advise

    run = tracekit.ingest([pathlib.Path(__file__).parents[2] / "examples" / "traces" / "fsdp"], tmp_path / "run",
                          jobs=1)
    listed = {(r["rank"], r["name"]): r["diff_ms"] for r in tracekit.report(run, "why_late").to_pylist()
              if r["kind"] != "lead-up"}
    assert (0, "aten::clone") in listed and (0, "c10d::_allgather_base_") in listed
    late = next(r for r in advise(run).to_pylist() if r["finding"].startswith("late rank 0"))
    assert late["finding"] == "late rank 0 (host-bound in aten::clone)"
    change = " ".join(late["change"].split())
    quoted = re.findall(r"rank (\d+) spends ([\d.,]+) ms a step more on \S+ op (\S+) than the others before its "
                        r"launches \(tracekit report RUN why_late\)", change)
    assert [(r, n) for r, _, n in quoted] == [("0", "aten::clone")], change
    assert "c10d::" not in change and "why_late names the ops" not in change
