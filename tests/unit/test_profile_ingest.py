"""benchmarks/profile_ingest.py runs (issue 39: it looked for every rule in sql/views/ and stopped at the first
fact): each step's rows are the trace's own."""

import pathlib
import runpy

from tests.conftest import dist, write_trace

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "profile_ingest.py"


def test_profile_ingest_prints_every_rule_with_the_traces_rows(tmp_path, capsys, monkeypatch):
    kernels = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": 10 * i, "dur": 2,
                "args": {"stream": 7}} for i in range(3)]
    cpu = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 40}]
    write_trace(tmp_path / "rank0.json", kernels + cpu, header=dist(0, world=1))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    main = runpy.run_path(str(SCRIPT))["main"]
    assert main([str(tmp_path / "rank0.json"), "--repeat", "1", "--threads", "1"]) == 0
    rows = {line[:28].strip(): line[28:].split()[0] for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows["parse (events Parquet)"] == "4"  # 3 kernels and an op
    assert rows["fact gpu_kernels"] == "3"
    from tracekit.rules import FACTS, FINISHED, REDUCED
    assert {k.split()[1] for k in rows if k.split()[0] in ("fact", "reduce", "finish")} == \
        set(FACTS) | set(REDUCED) | set(FINISHED)
    assert list(tmp_path.iterdir()) == [tmp_path / "rank0.json"]  # its work directory removed
