"""The README's commands as a user runs them, on the README's install (no pandas, no extras)."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT, live


def _python_snippet() -> str:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return next(b for b in blocks if b.startswith("import tracekit\n"))


def test_python_snippet_runs_without_pandas(tmp_path):
    shutil.copytree(ROOT / "examples" / "traces" / "fsdp", tmp_path / "traces")
    # pandas is not a dependency: the snippet must not need it (None in sys.modules makes its import fail)
    (tmp_path / "snippet.py").write_text('import sys\nsys.modules["pandas"] = None\n' + _python_snippet())
    r = subprocess.run([sys.executable, "snippet.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    # one line per collective x size bucket (smallest first), then the exposed report's rows; FSDP
    # all-gathers its parameters
    assert all(x.startswith("{'collective': ") for x in lines[:-1]) and len(lines) > 1
    assert any(x.startswith("{'collective': 'allgather', 'size_bucket': ") for x in lines[:-1])
    assert lines[-1].startswith("[{'key': 'default_pg', 'collectives': ")
    assert (live(tmp_path / "run") / "manifest.json").exists()


def readme_commands() -> list[str]:
    """Every `tracekit ...` line of the README's fenced blocks ($ prompts and # comments taken off)."""
    out = []
    for block in re.findall(r"```\w*\n(.*?)```", (ROOT / "README.md").read_text(), re.S):
        for line in block.splitlines():
            line = line.strip().removeprefix("$ ")
            if line.startswith("tracekit "):
                out.append(re.sub(r"\s+#.*$", "", line).strip())
    return out


def _helps() -> list[tuple[str, str]]:
    """Every command's --help text, as the command line prints it."""
    from click.testing import CliRunner

    from tracekit.cli.main import COMMAND_MODULES, cli

    return [(name, CliRunner().invoke(cli, [name, "--help"]).output) for name in COMMAND_MODULES]


def test_no_command_shown_needs_files_a_clone_lacks():
    """The README's commands and every command's --help use the traces in examples/, never ../shared
    (which a clone does not have): issue 30 found the advise showcase and whatif --help's example on it."""
    text = (ROOT / "README.md").read_text()
    shown = readme_commands()
    assert len(shown) > 25 and any(c.startswith("tracekit advise examples/traces/") for c in shown)
    assert [c for c in shown if "../shared" in c] == []
    for block in re.findall(r"```\w*\n(.*?)```", text, re.S):
        assert "../shared" not in block, block[:200]
    helps = _helps()
    assert {n for n, _ in helps} >= {"whatif", "advise", "report", "ingest"}
    assert [n for n, h in helps if "../shared" in h] == []


# What a command of the README names that a clone has not made yet, made here: the traces of the placeholders
# (traces/, and traces/quick and traces/fsdp, written by the torchrun commands before them: their runs ship in
# examples/traces; runs/quick's rank parts), a config file, and the SQL written as "SELECT ...". A command
# that needs a Dask cluster or a path of the user's is left out, with its reason.
PLACEHOLDERS = {"traces/quick": "ddp", "traces/fsdp": "fsdp"}
RUN_PLACEHOLDERS = {"runs/quick": "ddp"}  # a run of rank parts (trace_handler(DIR, run=RUN)), reduced
NEEDS_MORE = {"tracekit ingest traces/ -o /nfs/run/ --scheduler tcp://host:8786": "a Dask scheduler at tcp://host:8786",
              # (tests/cli/test_s3_runs.py runs these against the S3 server it starts)
              "tracekit ingest traces/ -o s3://my-bucket/runs/job-1": "an S3 bucket my-bucket at AWS_ENDPOINT_URL",
              "tracekit report s3://my-bucket/runs/job-1 summary": "an S3 bucket my-bucket at AWS_ENDPOINT_URL"}


@pytest.mark.slow
def test_every_command_of_the_readme_runs_in_a_clone(tmp_path):
    import shlex

    ex = ROOT / "examples" / "traces"
    shutil.copytree(ex, tmp_path / "examples" / "traces")
    shutil.copytree(ex / "fsdp" / "iteration_3", tmp_path / "traces")
    later = tmp_path / "after_torchrun"  # where the torchrun commands wrote traces/quick and traces/fsdp
    for where, name in PLACEHOLDERS.items():
        shutil.copytree(ex / name / "iteration_3", later / where)
    shutil.copy(ROOT / "examples" / "job.json", tmp_path / "examples" / "job.json")  # (the README's --config)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRACEKIT_CACHE": str(tmp_path / "cache")}
    for where, name in RUN_PLACEHOLDERS.items():  # the ranks' parts the torchrun command's handlers made
        for trace in sorted((ex / name / "iteration_3").glob("*.json.gz")):
            subprocess.run([sys.executable, "-m", "tracekit.ingestion.rank_part", str(trace), str(later / where)],
                           env=env, check=True, timeout=300)
        subprocess.run([sys.executable, "-m", "tracekit.cli.main", "ingest", "--reduce", str(later / where)], env=env,
                       check=True, timeout=300, capture_output=True)  # (quickstart's rank 0 reduces them)

    def tk(args, cwd=tmp_path):
        return subprocess.run([sys.executable, "-m", "tracekit.cli.main", *args], cwd=cwd, capture_output=True,
                              text=True, timeout=300, env=env)

    assert tk(["ingest", "examples/traces/ddp/iteration_3", "-o", "run_a/"]).returncode == 0
    assert tk(["ingest", "examples/traces/fsdp/iteration_3", "-o", "run_b/"]).returncode == 0
    ran = 0
    for command in readme_commands():
        if command in NEEDS_MORE:
            continue
        args = shlex.split(command.replace('"SELECT ..."', '"SELECT count(*) FROM collectives"'))[1:]
        r = tk(args, later if any(p in command for p in [*PLACEHOLDERS, *RUN_PLACEHOLDERS]) else tmp_path)
        # doctor --fail-on exits 6 when it finds something at that level: the command ran
        ok = r.returncode == 0 or (r.returncode == 6 and "--fail-on" in args)
        assert ok, f"{command}: exit {r.returncode}\n{r.stderr[-1500:]}"
        ran += 1
    assert ran >= len(readme_commands()) - len(NEEDS_MORE)


def test_the_sample_config_is_the_model_and_plan_the_ddp_example_recorded():
    """examples/job.json (the README's --config) describes the run it is shown on: the model and plan that
    examples/traces/ddp recorded in its traces."""
    import gzip
    import json

    sample = json.loads((ROOT / "examples" / "job.json").read_text())
    with gzip.open(next((ROOT / "examples" / "traces" / "ddp" / "iteration_3").glob("rank0*")), "rt") as f:
        recorded = json.load(f)["tracekit_config"]
    assert sample["model"] == recorded["model"]
    assert {k: recorded["plan"][k] for k in sample["plan"]} == sample["plan"]
