"""The package as pip builds it: the version written once (tracekit/__init__.py) is the wheel's and the
installed distribution's, and the wheel carries every rule file the code loads."""

import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

import tracekit

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_wheel_and_the_install_carry_the_one_version(tmp_path):
    src = tmp_path / "src"  # a copy: the build writes build/ and *.egg-info beside the sources
    shutil.copytree(ROOT / "tracekit", src / "tracekit",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info"))
    for f in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / f, src / f)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path / "dist"), str(src)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("tracekit-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = z.read(f"tracekit-{tracekit.__version__}.dist-info/METADATA").decode()
    assert f"Version: {tracekit.__version__}" in meta.splitlines()
    # every module (tracekit/commands/ and the other packages), SQL file and CSV table
    shipped = {str(p.relative_to(ROOT)) for p in (ROOT / "tracekit").rglob("*")
               if p.suffix in (".py", ".sql", ".csv") and "__pycache__" not in p.parts}
    assert shipped and shipped <= names, sorted(shipped - names)
    # installed (dependencies from this interpreter's site-packages), run from outside the checkout
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(tmp_path / "venv")], check=True)
    py = tmp_path / "venv" / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # not the checkout's tracekit
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True,
                   capture_output=True, env=env)
    out = subprocess.run([py, "-c", "import importlib.metadata as m, tracekit; "
                          "print(m.version('tracekit'), tracekit.__version__, tracekit.__file__)"],
                         cwd=tmp_path, env=env,
                         check=True, capture_output=True, text=True).stdout.split()
    assert out[:2] == [tracekit.__version__] * 2 and str(tmp_path / "venv") in out[2]


def test_ci_installs_the_build_backend_that_the_wheel_test_uses():
    """The wheel test builds with --no-build-isolation, so the build-system's requirements must be in CI's
    environment: .ci/run installs each of them, as pyproject.toml spells it (a fresh venv of Python 3.12+ has
    no setuptools; 3.11's is 65, below the >=68 pyproject asks)."""
    import re
    import shlex

    # tomllib is 3.11+ and the project supports 3.10: the one line that pyproject's [build-system] has
    line = re.findall(r"^requires = \[.*\]$", (ROOT / "pyproject.toml").read_text().split("[build-system]")[1],
                      re.M)[0]
    requires = [r.strip().strip('"') for r in line.split("[", 1)[1].rstrip("]").split(",") if r.strip()]
    installed = set()
    for line in (ROOT / ".ci" / "run").read_text().splitlines():
        words = shlex.split(line, comments=True)
        if words[:4] == ["python", "-m", "pip", "install"]:
            installed.update(words[4:])
    assert requires and set(requires) <= installed
