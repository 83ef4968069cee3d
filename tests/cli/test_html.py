"""tracekit html: a self-contained page, made as a user makes it (the command, from another directory, on
the traces), then opened in a real headless browser (Debian's chromium, which .ci/run installs): it loads
with no console message, every chart is drawn, no legend overlaps the plotting area or a bar, and the
screenshot shows the bars."""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import IN_CI, ROOT, shared_traces

BLUE, ORANGE, GREY = (31, 119, 180), (255, 127, 14), (127, 127, 127)  # hidden comm, exposed comm, compute
VERSION_DIR = re.compile(r"versions/v-\d+-\d+")  # a run's internal version directory (RUN/versions/v-NS-PID)

# injected into a copy of the page by the test only: the boxes of every chart's legend, plotting area
# and bars, on the console
PROBE = """<script>window.addEventListener("load",()=>setTimeout(()=>{const box=e=>{const r=e.getBoundingClientRect();
return [r.left,r.top,r.right,r.bottom]};for(const d of document.querySelectorAll("div.plot")){
const lg=d.querySelector("g.legend");console.log("LAYOUT "+JSON.stringify({id:d.id,
legend:lg?box(lg):null,area:box(d.querySelector("rect.nsewdrag")),
bars:[...d.querySelectorAll("g.point path")].map(box)}))}
for(const h of document.querySelectorAll("h2")){const s=h.nextElementSibling;
if(s&&s.classList.contains("scroll")){console.log("WIDTH "+JSON.stringify({section:h.textContent,
scroll:s.scrollWidth,client:s.clientWidth}))}}},300))</script>"""


def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if IN_CI:
            pytest.fail("chromium is missing: .ci/run installs it (apt-get install chromium)")
        pytest.skip("no chromium here (apt-get install chromium)")
    return exe


def tk(*args, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "tracekit.cli.main", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def make_page(tmp_path, traces: pathlib.Path) -> str:
    work = tmp_path / "work"
    shutil.copytree(traces, work / "traces")
    r = tk("html", "traces", "-o", "report.html", cwd=work, env={"TRACEKIT_CACHE": str(tmp_path / "cache")})
    assert r.returncode == 0 and r.stdout == "report.html\n", r.stderr
    text = (work / "report.html").read_text()
    assert text.count(_plotly_js()) == 1  # the charts' JavaScript, embedded once
    ours = text.replace(_plotly_js(), "")
    # self-contained: nothing is fetched from anywhere, no static image, the charts are drawn by the page
    assert not re.search(r'(src|href)="(?!data:)', ours) and "<img" not in ours
    # the run as the user named it, never a cache or version directory
    assert "<h1>tracekit report: traces</h1>" in text
    assert not VERSION_DIR.search(ours) and str(tmp_path / "cache") not in text
    return text


def _plotly_js() -> str:
    from tracekit.figures import plotly_js
    return plotly_js()


@pytest.mark.slow
def test_page_of_the_fsdp_example(tmp_path):
    text = make_page(tmp_path, ROOT / "examples" / "traces" / "fsdp" / "iteration_3")
    # the header: the example's 2 ranks on one host "vm" (distributedInfo and host_name in the traces), Gloo
    for item, value in (("ranks", "2 ranks (0–1)"), ("hosts", "1 host: vm"), ("backend", "gloo"),
                        ("NCCL", "not recorded in the traces"), ("steps", "step 2 (1 step)")):  # ProfilerStep#2 only
        assert f"<tr><td>{item}</td><td>{value}</td></tr>" in text, item
    for title in ("Summary", "Collectives by message size", "Overlap per rank", "Skew across ranks (most skewed first)",
                  "Exposed communication by process group", "Measured against the model (validate)",
                  "Health checks (doctor)", "Where each step goes (breakdown)", "Stragglers: who arrives last",
                  "Why the last rank is late (why_late)", "The critical path (replay of the dependency graph)"):
        assert f"<h2>{title}</h2>" in text
    # sizes, overlap, skew, the critical path, validate
    assert len(re.findall(r'<div class="plot" id="[a-z_]+"></div>', text)) == 5
    # one step: the per-step section says why it has no chart
    assert "No chart per step: the run has one step; the chart per rank above shows it." in text
    # the summary's collectives and comm_mb are one click away (<details>), beside the rank, not the whole table
    assert "<details><summary>2 more columns: collectives, comm_mb</summary>" in text


@pytest.mark.slow  # a browser over the real DLRM job: 18 s of the fast suite
def test_page_of_the_dlrm_run_in_chromium(tmp_path):
    traces = shared_traces() / "param_dlrm_kineto_8rank"
    text = make_page(tmp_path, traces)
    for item, value in (("ranks", "8 ranks (0–7)"), ("GPUs", "Tesla V100-SXM2-32GB × 8"),
                        ("steps", "step 10 (1 step)")):
        assert f"<tr><td>{item}</td><td>{value}</td></tr>" in text, item  # SOURCES.md: 8 V100s, ProfilerStep#10
    assert "Not compared: the traces carry no training config" in text
    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("</body>", PROBE + "</body>"))
    shot = tmp_path / "shot.png"
    proc = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--enable-logging=stderr", "--v=0", "--window-size=1400,4200", "--virtual-time-budget=5000",
                           f"--screenshot={shot}", probe.as_uri()],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "HOME": str(tmp_path)})
    assert shot.exists(), proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    layouts = [json.loads(re.search(r'"LAYOUT (.*)", source', line).group(1).replace('\\"', '"'))
               for line in console if "LAYOUT " in line]
    widths = {w["section"]: w for w in (json.loads(re.search(r'"WIDTH (.*)", source', line).group(1).replace(
        '\\"', '"')) for line in console if "WIDTH " in line)}
    assert len(console) == len(layouts) + len(widths), console  # no other console message: every chart drew
    # the sections of issue 30 are on the page, and why_late's long kernel names wrap in their cells: its table
    # is no wider than the page (its numbers are in view without scrolling sideways)
    for title in ("Health checks (doctor)", "Where each step goes (breakdown)", "Stragglers: who arrives last",
                  "Why the last rank is late (why_late)", "The critical path (replay of the dependency graph)"):
        assert f"<h2>{title}</h2>" in text, title
    late = widths["Why the last rank is late (why_late)"]
    assert late["scroll"] <= late["client"], late
    assert "cub::DeviceRadixSortOnesweepKernel" in text  # a 200-character name is among its rows
    assert {x["id"] for x in layouts} == {"message_sizes", "overlap", "skew", "critical_path"}

    def meet(a, b):
        return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]

    for x in layouts:
        if x["legend"]:
            assert not meet(x["legend"], x["area"]), x  # outside the plotting area: it cannot cover data
            assert not any(meet(x["legend"], b) for b in x["bars"]), x
    assert len(next(x for x in layouts if x["id"] == "overlap")["bars"]) == 3 * 8  # hidden, exposed, compute x 8

    import numpy as np
    from PIL import Image
    px = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    counts = {c: int((np.abs(px - c) < 8).all(axis=2).sum()) for c in (BLUE, ORANGE, GREY)}
    assert all(n > 2000 for n in counts.values()), counts  # the bars are drawn, in their three colours


def test_run_renders_in_jupyter(tmp_path):
    import tracekit
    run = tracekit.open(ROOT / "examples" / "traces" / "fsdp")
    page = run._repr_html_()
    assert page.startswith(f"<div><b>tracekit run {ROOT / 'examples' / 'traces' / 'fsdp'}</b>")
    assert "<tr><td>ranks</td><td>2 ranks (0–1)</td></tr>" in page  # the identity
    assert "<b>summary</b>" in page and "<th>exposed_comm_ms</th>" in page
    assert "<b>doctor</b>" in page and '<td class="t">no finding</td>' in page  # the example is healthy


def test_identity_report_of_the_b200_trace(tmp_path):
    # SOURCES.md: rank 0 of 8, NVIDIA B200, NCCL 2.27.5, CUDA runtime 12.9, no ProfilerStep
    trace = shared_traces() / "tracelens_b200_eager"
    r = tk("report", trace, "identity", "--format", "csv", cwd=tmp_path, env={"TRACEKIT_CACHE": str(tmp_path / "c")})
    assert r.returncode == 0, r.stderr
    rows = dict(line.split(",", 1) for line in r.stdout.splitlines()[1:])
    assert rows["ranks"] == "1 rank (0) of a world of 8" and rows["GPUs"] == "NVIDIA B200"
    assert rows["NCCL"] == "2.27.5" and rows["CUDA runtime"] == "12.9"
    assert rows["steps"] == "none (no ProfilerStep in the traces)" and rows["PyTorch"] == "not recorded in the traces"


def test_identity_lists_eight_hosts_then_counts_the_rest(tmp_path):
    from tests.conftest import dist, write_trace
    for r in range(10):
        write_trace(tmp_path / f"rank{r}.json", [{"ph": "X", "name": "op", "ts": 1, "dur": 1, "pid": 1, "tid": 1}],
                    header={**dist(r, world=10), "host_name": f"h{r}"})
    r = tk("report", ".", "identity", "--format", "csv", cwd=tmp_path, env={"TRACEKIT_CACHE": str(tmp_path / "c")})
    assert r.returncode == 0, r.stderr
    rows = dict(line.split(",", 1) for line in r.stdout.splitlines()[1:])
    assert rows["hosts"] == '"10 hosts: h0, h1, h2, h3, h4, h5, h6, h7, … (2 more)"'
    assert rows["ranks"] == "10 ranks (0–9)"


def test_versions_are_read_once_at_ingest_into_trace_versions(tmp_path):
    # three ranks whose headers record two PyTorch builds on one CUDA runtime (12040: 12.4), rank 2 with a
    # training config: trace_versions groups them as written; identity and doctor read it, not the metadata
    import tracekit
    from tests.conftest import dist, write_trace
    heads = [{"pytorch_version": "2.5.0", "cuda_runtime_version": 12040},
             {"pytorch_version": "2.5.0", "cuda_runtime_version": 12040},
             {"pytorch_version": "2.6.0", "cuda_runtime_version": 12040, "tracekit_config": {"model": {}}}]
    for r, head in enumerate(heads):
        write_trace(tmp_path / f"rank{r}.json", [{"ph": "X", "name": "op", "ts": 1, "dur": 1, "pid": 1, "tid": 1}],
                    header={**dist(r, world=3), **head})
    run = tracekit.open(tmp_path)
    rows = run.sql("SELECT * FROM trace_versions ORDER BY first_rank").to_pylist()
    assert rows == [{"pytorch_version": "2.5.0", "cuda_runtime_version": "12040", "has_config": False, "rank_count": 2,
                     "first_rank": 0},
                    {"pytorch_version": "2.6.0", "cuda_runtime_version": "12040", "has_config": True, "rank_count": 1,
                     "first_rank": 2}]
    ident = {r["item"]: r["value"] for r in tracekit.report(run, "identity").to_pylist()}
    assert ident["PyTorch"] == "2.5.0, 2.6.0" and ident["CUDA runtime"] == "12.4"
    mixed = [r for r in tracekit.report(run, "doctor").to_pylist() if r["check"] == "mixed versions"]
    assert len(mixed) == 1 and mixed[0]["finding"] == "the traces differ in PyTorch version"


def test_identity_words_versions_oldest_first_steps_counted_one_gpu_per_host(tmp_path):
    # two ranks whose headers record their versions newest first (rank 0: PyTorch 2.6.0 on CUDA 12040 =
    # 12.4; rank 1: 2.5.0 on 11080 = 11.8, and 10.2 sorts before both though "10" < "11" < "9" as text),
    # each listing one GPU (deviceProperties: one GPU per host, assumed); rank 0 profiles steps 3 and 7
    import tracekit
    from tests.conftest import dist, write_trace
    from tests.tracegen import step
    heads = [{"pytorch_version": "2.6.0", "cuda_runtime_version": 12040},
             {"pytorch_version": "2.5.0", "cuda_runtime_version": 11080},
             {"pytorch_version": "2.5.0", "cuda_runtime_version": 10020}]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for r, head in enumerate(heads):
        events = [step(3, 0, 100), step(7, 200, 100)] if r == 0 else [step(7, 200, 100)]
        write_trace(tmp_path / "a" / f"rank{r}.json", events,
                    header={**dist(r, world=3), **head, "deviceProperties": [{"id": 0, "name": "GPU-X"}]})
    ident = {r["item"]: r["value"] for r in tracekit.report(tracekit.open(tmp_path / "a"), "identity").to_pylist()}
    assert ident["PyTorch"] == "2.5.0, 2.6.0"
    assert ident["CUDA runtime"] == "10.2, 11.8, 12.4"
    assert ident["steps"] == "3, 7 (2 steps)"
    assert ident["hosts known from"] == "assumed: 1 GPU per host (deviceProperties), consecutive ranks"
    write_trace(tmp_path / "b" / "rank0.json", [step(5, 0, 100)], header=dist(0, world=1))
    one = {r["item"]: r["value"] for r in tracekit.report(tracekit.open(tmp_path / "b"), "identity").to_pylist()}
    assert one["steps"] == "step 5 (1 step)"  # it read "5": five steps, or step 5?


def _tables_after(text: str, marker: str) -> list[list[list[str]]]:
    """The cells of each <table> after ``marker`` in the page, row by row (the header row first)."""
    import html as _html
    return [[[_html.unescape(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)]
             for row in re.findall(r"<tr>(.*?)</tr>", t)]
            for t in re.findall(r"<table>.*?</table>", text[text.index(marker):])]


@pytest.mark.slow
def test_page_above_the_per_rank_limit_shows_spreads_and_the_worst_ranks(tmp_path, monkeypatch):
    # 4 ranks, each a step with one compute kernel, then one allreduce that nothing overlaps: rank r starts it
    # at 2,000 + 100 r us and runs it for 1, 2, 3 and 10 ms. So comm_ms = exposed_comm_ms = 1, 2, 3, 10: min 1,
    # median (2 + 3) / 2 = 2.5, 90th percentile at 0.9 x 3 = 2.7 between the sorted values: 3 + 0.7 x 7 = 7.9,
    # max 10 on rank 3. Rank 3 starts last: the others wait 300, 200, 100 us for it (rank 0 longest).
    import tracekit
    from tests.conftest import dist, write_trace
    from tests.tracegen import kernel, step
    from tracekit import html_tables
    from tracekit.commands.html import write_html

    for r, ms in enumerate([1, 2, 3, 10]):
        events = [step(1, 0, 20000)] + kernel("volta_sgemm_128x64_nn", 100, 1000) + kernel(
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 2000 + 100 * r,
            ms * 1000, stream=20)
        write_trace(tmp_path / f"rank{r}.json", events, header=dist(r, world=4))
    monkeypatch.setattr(html_tables, "PER_RANK_ROWS", 2)  # 4 ranks are above it: the page of a big job
    monkeypatch.setattr(html_tables, "WORST_ROWS", 2)
    run = tracekit.open(tmp_path)
    text = pathlib.Path(write_html(run, str(tmp_path / "page.html"))).read_text()
    from tracekit.figures import plotly_js
    text = text.replace(plotly_js(), "")

    import html as _html
    words = _html.unescape(text)
    # the summary, the overlap per rank and the stragglers (breakdown's rows are ranks and steps)
    assert words.count("4 ranks: each number's spread over the ranks") == 3
    assert "4 ranks, 4 rank and step rows: each number's spread over the rank and step rows" in words
    assert "then the 2 rank and step rows with the most timeline_ms" in words  # breakdown's longest steps
    assert f"Every row: `tracekit report {tmp_path} summary`." in words
    spread, worst = _tables_after(text, "4 ranks: each number")[:2]
    assert spread[0] == ["column", "rows", "min", "median", "p90", "max", "max_rank"]
    rows = {r[0]: r[1:] for r in spread[1:]}
    assert rows["comm_ms"] == ["4", "1.000", "2.500", "7.900", "10.000", "3"]
    assert rows["exposed_comm_ms"] == ["4", "1.000", "2.500", "7.900", "10.000", "3"]
    assert [r[0] for r in worst[1:]] == ["3", "2"]  # the 2 ranks with the most exposed communication, most first
    # the charts: overlap per rank draws the 2 ranks of most exposed comm; skew rank 3 (waited least) and 0
    figs = {m.group(1): json.loads(m.group(2).replace("<\\/", "</")) for m in re.finditer(
        r'<div class="plot" id="([a-z_]+)"></div><script>.*?\}\)\((\{.*?\})\);</script>', text)}
    assert figs["overlap"]["data"][0]["x"] == ["2", "3"]
    assert figs["skew"]["data"][0]["y"] == ["0", "3"]
    assert "The chart draws the 2 ranks with the most exposed communication, of 4." in words
    assert "The chart draws 2 of the 4 ranks: the 1 that waited least in all over its instances" in words


def test_a_long_name_without_spaces_wraps_in_its_cell_in_chromium(tmp_path):
    """A kernel name with no space to break at (a mangled C++ name, 300 characters) wraps inside its cell:
    the table stays as wide as the page and the numbers after the name stay in view."""
    import pyarrow as pa

    from tracekit.commands.html import STYLE
    from tracekit.html_tables import table

    name = "_ZN2at6native" + "x" * 280 + "Kernel"
    t = pa.table({"rank": [4], "kind": ["kernel"], "name": [name], "late_ms": [0.047], "diff_ms": [0.041]})
    page = tmp_path / "page.html"
    page.write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8"><style>{STYLE}</style></head><body>'
                    f"<h2>why_late</h2>{table(t)}{PROBE}</body></html>")
    proc = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                           "--v=0", "--window-size=1000,800", "--virtual-time-budget=3000", "--dump-dom",
                           page.as_uri()], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "HOME": str(tmp_path)})
    widths = [json.loads(re.search(r'"WIDTH (.*)", source', line).group(1).replace('\\"', '"'))
              for line in proc.stderr.splitlines() if "WIDTH " in line]
    assert len(widths) == 1, proc.stderr[-2000:]
    assert widths[0]["scroll"] <= widths[0]["client"], widths


def _page_structure(tmp_path, name: str) -> tuple[str, dict]:
    """The page of a 2-rank job whose one process group is named ``name``, parsed as a browser parses it
    (html5lib: the WHATWG tokenizer, script data states included): its text and what it holds."""
    import html5lib

    import tracekit
    from tests.conftest import dist, write_trace
    from tests.tracegen import kernel, step

    d = tmp_path / "t"
    d.mkdir(parents=True)
    for r in range(2):
        write_trace(d / f"rank{r}.json", [step(1, 0, 1000), *kernel("gemm", 300, 200), *kernel(
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 100 + 30 * r, 50 - 30 * r, stream=20, **{
                "Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float",
                "Seq": 0, "Process Group Name": name, "Process Group Description": name, "Group size": 2,
                "Process Group Ranks": "[0, 1]"})], header=dist(r, world=2))
    tracekit.html(tracekit.ingest([d], tmp_path / "run", jobs=1), tmp_path / "p.html")
    text = (tmp_path / "p.html").read_text()
    doc = html5lib.parse(text, namespaceHTMLElements=False)
    return text, {"sections": [h.text for h in doc.iter("h2")], "tables": len(doc.findall(".//table")),
                  "charts": [c.get("id") for c in doc.findall(".//div[@class='plot']")],
                  "scripts": len(doc.findall(".//script"))}


@pytest.mark.parametrize("name", ["pg<!--<script>", "pg</SCRIPT><b>x"])
def test_no_name_changes_the_page_structure(tmp_path, name):
    """Issue 40, item 3: JSON in a script element escaped only '</': a group named 'pg<!--<script>' put the
    chart's script in the double-escaped state, where its '</script>' does not end it, and the markup up to
    a later one was swallowed (4 tables and a chart gone). The page with such a name holds what the page
    with a plain name does (the same job), and the name is shown whole."""
    html5lib = pytest.importorskip("html5lib")
    _, plain = _page_structure(tmp_path / "plain", "pgplain")
    text, hostile = _page_structure(tmp_path / "hostile", name)
    assert plain["charts"] and plain["tables"] > 10  # (what there is to lose)
    assert hostile == plain
    cells = [c.text for c in html5lib.parse(text, namespaceHTMLElements=False).iter("td")]
    assert name in cells  # shown whole, as text


@pytest.mark.slow
def test_a_page_with_plotly_beside_is_small_and_draws_in_chromium(tmp_path):
    """Issue 40, also seen: each page was 4.9 MB for ~77 KB of content. `--plotly-js beside` writes the bundle
    once beside the page; the page names it by a relative src, and a real browser draws every chart from it,
    offline. A link planted under the bundle's name is replaced, never written through."""
    from tracekit.figures import plotly_js_name
    work = tmp_path / "work"
    shutil.copytree(ROOT / "examples" / "traces" / "fsdp" / "iteration_3", work / "traces")
    (work / "pages").mkdir()
    outside = tmp_path / "outside.js"
    outside.write_text("kept")
    (work / "pages" / plotly_js_name()).symlink_to(outside)
    r = tk("html", "traces", "-o", "pages/report.html", "--plotly-js", "beside", cwd=work,
           env={"TRACEKIT_CACHE": str(tmp_path / "cache")})
    assert r.returncode == 0, r.stderr
    page = work / "pages" / "report.html"
    bundle = work / "pages" / plotly_js_name()
    assert outside.read_text() == "kept" and not bundle.is_symlink()
    assert bundle.read_text() == _plotly_js()
    text = page.read_text()
    assert _plotly_js() not in text and page.stat().st_size < 300_000  # the fsdp page's content is tens of KB
    assert re.findall(r'<script src="([^"]+)"', text) == [plotly_js_name()]
    probe = work / "pages" / "probe.html"  # beside the bundle, as the page is
    probe.write_text(text.replace("</body>", PROBE + "</body>"))
    proc = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                           "--v=0", "--window-size=1400,4200", "--virtual-time-budget=5000", "--dump-dom",
                           probe.as_uri()], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "HOME": str(tmp_path)})
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    layouts = [json.loads(re.search(r'"LAYOUT (.*)", source', line).group(1).replace('\\"', '"'))
               for line in console if "LAYOUT " in line]
    ids = set(re.findall(r'<div class="plot" id="([a-z_]+)"></div>', text))
    assert len(ids) == 5 and {x["id"] for x in layouts} == ids, console
    assert not [line for line in console if "chart failed to draw" in line or "Plotly" in line], console
    assert all(x["area"] for x in layouts) and next(x for x in layouts if x["id"] == "overlap")["bars"]
