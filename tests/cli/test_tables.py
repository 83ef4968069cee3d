"""Tables as a user gets them from the command line: --columns on every table, report options generated
from the reports' declarations, a truncated table that says so, one number style."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT, dist, shared_traces, write_trace
from tracekit.reports import REGISTRY


def tk(*args, cwd, env=None):
    r = subprocess.run([sys.executable, "-m", "tracekit.cli.main", *map(str, args)], cwd=cwd, capture_output=True,
                       text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    return r.returncode, r.stdout, r.stderr


def _fsdp(tmp_path):
    shutil.copytree(ROOT / "examples" / "traces" / "fsdp", tmp_path / "traces")
    return {"TRACEKIT_CACHE": str(tmp_path / "cache")}


@pytest.mark.slow
def test_columns_picks_and_orders_columns_in_every_format(tmp_path):
    env = _fsdp(tmp_path)
    code, out, err = tk("report", "traces", "summary", "--columns", "top_collective,rank", "--format", "csv",
                        cwd=tmp_path, env=env)
    assert code == 0, err
    assert out.splitlines()[0] == "top_collective,rank"
    assert [x.split(",")[1] for x in out.splitlines()[1:]] == ["0", "1"]
    code, out, err = tk("sql", "traces", "SELECT 1 AS a, 2 AS b", "--columns", "b", "--format", "json",
                        cwd=tmp_path, env=env)
    assert json.loads(out) == [{"b": 2}]
    code, out, err = tk("report", "traces", "summary", "--columns", "rank,nope", cwd=tmp_path, env=env)
    assert code == 2 and out == ""  # a command line naming what is not there (README: 2)
    assert err.startswith("error: --columns: no column nope here; the columns are: rank, steps, window_ms, ")


def test_report_options_come_from_the_report_declarations(tmp_path):
    code, out, err = tk("report", "--help", cwd=tmp_path)
    assert code == 0
    text = " ".join(out.split())
    declared = {p.name for r in REGISTRY.values() for p in r.params}
    for name in declared:
        assert f"--{name.replace('_', '-')} " in text
    for rep in REGISTRY.values():
        for p in rep.params:
            if p.choices:
                assert f"{rep.name}: {'|'.join(p.choices)} [default: {p.default}]" in text
    code, out, err = tk("report", str(ROOT / "examples" / "traces" / "fsdp"), "summary", "--limit", "3",
                        cwd=tmp_path, env={"TRACEKIT_CACHE": str(tmp_path / "cache")})
    assert code == 2 and err == "error: report 'summary' takes no parameter limit; it takes none\n"  # README: 2


def test_truncated_skew_says_how_many_rows_it_left_out(tmp_path):
    dlrm = shared_traces() / "param_dlrm_kineto_8rank"
    env = {"TRACEKIT_CACHE": str(tmp_path / "cache")}
    # SOURCES.md: every rank has 8 NCCL kernels, so 8 instances matched across the 8 ranks
    code, out, err = tk("report", dlrm, "skew", "--limit", "3", "--format", "csv", cwd=tmp_path, env=env)
    assert code == 0 and len(out.splitlines()) == 1 + 3
    assert err == "3 of 8 rows shown; --limit 0 shows all\n"
    code, out, err = tk("report", dlrm, "skew", "--limit", "0", "--format", "csv", cwd=tmp_path, env=env)
    assert code == 0 and len(out.splitlines()) == 1 + 8 and err == ""


@pytest.mark.slow
def test_integers_have_separators_in_tables_and_stay_exact_in_csv(tmp_path):
    env = _fsdp(tmp_path)
    q = "SELECT sum(bytes) AS total FROM collectives"  # a HUGEINT sum (a Decimal in Python)
    code, csv_out, err = tk("sql", "traces", q, "--format", "csv", cwd=tmp_path, env=env)
    exact = int(csv_out.splitlines()[1])
    assert exact > 1000
    code, table, err = tk("sql", "traces", q, "--format", "markdown", cwd=tmp_path, env=env)
    assert table.splitlines()[2] == f"| {exact:,} |"


def test_several_cycles_name_a_directory_to_give(tmp_path):
    for n in (4, 8):
        d = tmp_path / "traces" / f"iteration_{n}"
        d.mkdir(parents=True)
        write_trace(d / "rank0_trace.json", [{"ph": "X", "name": "op", "ts": 1, "dur": 1, "pid": 1, "tid": 1}],
                    header=dist(0, world=1))
    env = {"TRACEKIT_CACHE": str(tmp_path / "cache")}
    code, out, err = tk("report", "traces", "summary", cwd=tmp_path, env=env)
    assert code == 1
    assert err == ("error: the inputs hold 2 profiling cycles: iteration_4 (1 file), iteration_8 (1 file). A run is "
                   "one cycle: give one cycle's directory (e.g. traces/iteration_8) instead, or ingest with "
                   "`tracekit ingest --iteration N` (torch.profiler.schedule(..., repeat=1) records one cycle)\n")
    code, out, err = tk("report", "traces/iteration_8", "summary", "--format", "csv", cwd=tmp_path, env=env)
    # what the message said works: the cycle is ingested (a CPU op only: the summary says why it is empty)
    assert code == 0 and err.startswith("no rows: the traces hold no GPU kernel and no Gloo op"), err


@pytest.mark.slow
def test_schema_of_one_table_view_or_report(tmp_path):
    env = _fsdp(tmp_path)
    code, out, err = tk("schema", "traces", "steps", "--format", "csv", cwd=tmp_path, env=env)
    assert code == 0, err
    # the steps view's header (sql/facts/steps.sql) documents these five columns
    assert [x.split(",")[:3] for x in out.splitlines()[1:]] == [
        ["steps", "rank", "BIGINT"], ["steps", "step", "BIGINT"], ["steps", "ts_ns", "BIGINT"],
        ["steps", "end_ns", "BIGINT"], ["steps", "dur_ns", "BIGINT"]]
    code, out, err = tk("schema", "traces", "skew", "--format", "csv", cwd=tmp_path, env=env)
    assert code == 0 and out.splitlines()[1].startswith("report skew,instance_key,,")
    code, out, err = tk("schema", "traces", "colectives", cwd=tmp_path, env=env)
    assert code == 2 and err == ("error: schema: no table or view named colectives; did you mean collectives or "
                                 "collective_waits?\n")


def test_plot_writes_an_interactive_chart_without_matplotlib(tmp_path):
    env = _fsdp(tmp_path)
    no_mpl = ("import sys; sys.modules['matplotlib'] = None; from tracekit.cli.main import main; "
              "sys.exit(main(sys.argv[1:]))")

    def run(*a):
        return subprocess.run([sys.executable, "-c", no_mpl, *a], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT), **env})

    r = run("plot", "traces", "-o", "sizes.html")
    assert r.returncode == 0 and r.stdout == "sizes.html\n", r.stderr
    page = (tmp_path / "sizes.html").read_text()
    assert "<h2>Message sizes per collective: traces</h2>" in page and '<div class="plot" id="chart">' in page
    assert '"type": "bar", "name": "allgather"' in page  # FSDP all-gathers its parameters
    r = run("plot", "traces", "-o", "sizes.png")
    assert r.returncode == 1 and r.stderr.startswith("error: PNG plots need matplotlib: pip install 'tracekit[plot]'")
