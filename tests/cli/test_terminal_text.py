"""Strings from a trace are data: the terminal shows them, never reads them as rich markup or obeys their
control sequences (issue 20, item 3)."""

import pytest

from tests.conftest import dist, write_trace
from tests.tracegen import kernel, step
from tracekit.cli.main import main

NAMES = ["[/x]", "[bold]x", "\x1b[31mred", "[link=https://example.com]y"]


@pytest.fixture
def run(tmp_path):
    evs = [step(1, 0, 1000)]
    for i, name in enumerate(NAMES):  # one allreduce per group, each fully exposed (nothing else runs)
        evs += kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 100 * i + 10, 20, stream=20,
                      **{"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024,
                         "dtype": "Float", "Seq": i, "Process Group Name": str(i),
                         "Process Group Description": name, "Group size": 1})
    write_trace(tmp_path / "rank0.json", evs, header=dist(0, world=1))
    assert main(["ingest", str(tmp_path / "rank0.json"), "-o", str(tmp_path / "run")]) == 0
    return tmp_path / "run"


def test_group_names_are_shown_not_interpreted(run, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # (wide enough for every name whole: narrower, a long one is cut)
    capsys.readouterr()
    assert main(["report", str(run), "exposed", "--by", "group"]) == 0
    out = capsys.readouterr().out
    for name in ("[/x]", "[bold]x", "[link=https://example.com]y"):
        assert name in out  # kept verbatim: neither a MarkupError nor silently dropped
    assert "\x1b" not in out and "\\x1b[31mred" in out  # the ESC made visible, not sent


def test_sql_table_shows_control_characters_escaped(run, capsys):
    capsys.readouterr()
    q = "SELECT DISTINCT pg_desc FROM collectives ORDER BY pg_desc"
    assert main(["sql", str(run), q]) == 0
    out = capsys.readouterr().out
    assert "[/x]" in out and "[bold]x" in out and "\x1b" not in out and "\\x1b[31mred" in out


def test_csv_to_a_pipe_keeps_the_data_exact(run, capsys):
    capsys.readouterr()
    assert main(["sql", str(run), "SELECT DISTINCT pg_desc FROM collectives ORDER BY pg_desc", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == sorted(NAMES)


def test_safe_text():
    from tracekit.render import safe_text
    assert safe_text("a\x1b[2Jb\rc\x07d\x9be\u202ef\tg\nh") == "a\\x1b[2Jb\\rc\\x07d\\x9be\\u202ef\tg\nh"


def test_whatif_overlap_writes_the_group_name_escaped(tmp_path, capsys):
    """Issue 40, item 4: `whatif RUN --overlap GROUP` wrote the group's name into its note raw (a title set,
    the screen cleared): it is escaped as every other command escapes it."""
    name = "g\x1b]0;pwned\x07\x1b[2J"
    for r in range(2):
        write_trace(tmp_path / f"rank{r}.json", [step(1, 0, 1000), *kernel("gemm", 300, 200), *kernel(
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 100 + 30 * r, 50 - 30 * r, stream=20, **{
                "Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float",
                "Seq": 0, "Process Group Name": name, "Process Group Description": name, "Group size": 2,
                "Process Group Ranks": "[0, 1]"})], header=dist(r, world=2))
    assert main(["ingest", str(tmp_path), "-o", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    assert main(["whatif", str(tmp_path / "run"), "--overlap", name, "--format", "csv"]) == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert "group g\\x1b]0;pwned\\x07\\x1b[2J overlapped" in err  # the name, shown with its escapes visible
