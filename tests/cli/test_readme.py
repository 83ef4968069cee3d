"""The README's commands as a user runs them, on the README's install (no pandas, no extras)."""

import os
import re
import shutil
import subprocess
import sys

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
