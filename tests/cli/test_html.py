"""tracekit html: a self-contained page, opened in a real headless browser (Debian's chromium, which
.ci/run installs): it loads with no console message and the screenshot shows the plots."""

import os
import pathlib
import re
import shutil
import subprocess

import pytest

from tests.conftest import IN_CI
from tracekit.cli.main import main

ROOT = pathlib.Path(__file__).resolve().parents[2]
TAB_BLUE = (31, 119, 180)  # matplotlib's first colour: the bars of the plots


def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if IN_CI:
            pytest.fail("chromium is missing: .ci/run installs it (apt-get install chromium)")
        pytest.skip("no chromium here (apt-get install chromium)")
    return exe


def test_html_report_loads_cleanly_and_shows_the_plots(tmp_path):
    pytest.importorskip("matplotlib")
    from PIL import Image
    page = tmp_path / "report.html"
    assert main(["html", str(ROOT / "examples" / "traces" / "fsdp"), "-o", str(page)]) == 0
    text = page.read_text()
    # self-contained: every image is embedded, nothing is fetched from anywhere
    assert not re.search(r'(src|href)="(?!data:)', text)
    assert len(re.findall(r'<img alt="[^"]+" src="data:image/png;base64,', text)) == 5
    for title in ("Summary", "Collectives by message size", "Overlap per rank", "Skew across ranks",
                  "Exposed communication by process group", "Measured against the model (validate)"):
        assert f"<h2>{title}</h2>" in text
    shot = tmp_path / "shot.png"
    proc = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--enable-logging=stderr", "--v=0", "--window-size=1200,4000",
                           f"--screenshot={shot}", page.as_uri()],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "HOME": str(tmp_path)})
    assert shot.exists(), proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    img = Image.open(shot).convert("RGB")
    blue = sum(1 for px in img.getdata() if all(abs(a - b) < 8 for a, b in zip(px, TAB_BLUE)))
    assert blue > 5000, blue  # the bar plots are drawn
