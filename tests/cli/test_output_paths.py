"""-o FILE in folders that are not there yet: made, as ingest -o makes its own; an output that cannot be
written is one line, before any work (issue 20, item 13)."""

import json
import os

import pytest

from tests.conftest import dist, write_trace
from tracekit.cli.main import main


@pytest.fixture
def run(tmp_path):
    write_trace(tmp_path / "rank0.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1,
                                            "dur": 1}], header=dist(0, world=1))
    assert main(["ingest", str(tmp_path / "rank0.json"), "-o", str(tmp_path / "run")]) == 0
    return tmp_path / "run"


COMMANDS = [["html", "{run}", "-o", "{out}.html"], ["timeline", "{run}", "-o", "{out}.json"],
            ["plot", "{run}", "--kind", "overlap", "-o", "{out}.html"],
            ["sql", "{run}", "SELECT 1 AS one", "-o", "{out}.csv", "--format", "csv"],
            ["report", "{run}", "summary", "-o", "{out}.csv", "--format", "csv"]]


def _out(argv):
    return argv[argv.index("-o") + 1]


@pytest.mark.parametrize("args", COMMANDS)
def test_output_in_a_missing_directory_is_made(run, tmp_path, args):
    argv = [a.format(run=run, out=tmp_path / "reports" / "new" / "x") for a in args]
    assert main(argv) == 0
    written = tmp_path / "reports" / "new" / ("x" + _out(argv).rsplit("x", 1)[1])
    assert written.is_file() and written.stat().st_size > 0
    assert sorted(p.name for p in written.parent.iterdir()) == [written.name]  # no temporary file left
    if args[0] == "sql":
        assert written.read_text().splitlines() == ["one", "1"]


def test_html_plotly_beside_in_a_missing_directory(run, tmp_path):
    """The example html --help gives: the page and its plotly-VERSION.min.js, in the folder it made."""
    page = tmp_path / "reports" / "run.html"
    assert main(["html", str(run), "-o", str(page), "--plotly-js", "beside"]) == 0
    js = [p.name for p in page.parent.iterdir() if p.name.startswith("plotly-") and p.name.endswith(".min.js")]
    assert page.is_file() and len(js) == 1 and f'src="{js[0]}"' in page.read_text()


@pytest.mark.parametrize("args", COMMANDS)
def test_output_under_a_file_is_one_line_before_any_work(run, tmp_path, capsys, args):
    (tmp_path / "afile").write_text("")
    argv = [a.format(run=run, out=tmp_path / "afile" / "sub" / "x") for a in args]
    capsys.readouterr()
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err == f"error: {_out(argv)}: cannot write it (cannot make its directory {tmp_path / 'afile' / 'sub'}: " \
                  "Not a directory)\n"
    assert (tmp_path / "afile").read_text() == ""


@pytest.mark.parametrize("args", COMMANDS)
@pytest.mark.parametrize("url", ["s3://bucket/reports/x", "gs://bucket/x"])
def test_output_to_a_url_is_refused_and_makes_no_local_folder(run, tmp_path, monkeypatch, capsys, args, url):
    """-o takes a local file: a URL is one line, never a folder named 's3:' made in the working directory
    (the folders of a missing path are made: a URL read as a path would be one)."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    argv = [a.format(run=run, out=url) for a in args]
    capsys.readouterr()
    assert main(argv) == 1
    assert capsys.readouterr().err == f"error: {_out(argv)}: -o writes a local file, not to a URL; write it " \
                                      "here, then copy it there\n"
    assert list(work.iterdir()) == []



@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc: a folder no one may add a file to")
@pytest.mark.parametrize("args", COMMANDS)
def test_output_in_a_folder_it_cannot_write_is_one_line(run, capsys, args):
    """html and plot said 'internal error: FileNotFoundError: ... /proc/x.html.tmp-N' (a fresh user's
    attack: /proc is there, and no one, root included, may create a file in it)."""
    argv = [a.format(run=run, out="/proc/tracekit-x") for a in args]
    capsys.readouterr()
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {_out(argv)}: cannot write it (") and err.count("\n") == 1, err


@pytest.mark.parametrize("suffix", [".csv", ".json", ".md", ".parquet", ".txt"])
def test_output_format_follows_the_file_name(run, tmp_path, suffix):
    """-o rows.csv writes csv (as -o in pandas' and DuckDB's COPY reads the name) unless --format says
    otherwise; a name with no format of its own gets the table. Expected bytes: each format's own
    spelling of the one row `SELECT 1 AS one`."""
    out = tmp_path / f"rows{suffix}"
    assert main(["sql", str(run), "SELECT 1 AS one", "-o", str(out)]) == 0
    if suffix == ".parquet":
        import pyarrow.parquet as pq
        assert pq.read_table(out).to_pylist() == [{"one": 1}]
        return
    text = out.read_text()
    if suffix == ".csv":
        assert text.splitlines() == ["one", "1"]
    elif suffix == ".json":
        assert json.loads(text) == [{"one": 1}]
    elif suffix == ".md":
        assert text.splitlines()[0].replace(" ", "") == "|one|"
    else:
        assert "one" in text and "|one|" not in text.replace(" ", "") and text.strip() != "one\n1"


def test_an_explicit_format_wins_over_the_file_name(run, tmp_path):
    out = tmp_path / "rows.csv"
    assert main(["sql", str(run), "SELECT 1 AS one", "--format", "json", "-o", str(out)]) == 0
    assert json.loads(out.read_text()) == [{"one": 1}]
    assert main(["sql", str(run), "SELECT 1 AS one", "-o", str(out), "--format", "json"]) == 0
    assert json.loads(out.read_text()) == [{"one": 1}]


def test_validate_without_a_config_is_a_usage_error(run, capsys):
    """README's exit codes: 2 for an input the command needs and is not given (a run whose traces carry no
    training config, and no --config); it exited 1, the code of other errors (a full disk)."""
    capsys.readouterr()
    assert main(["validate", str(run)]) == 2
    assert "the traces carry no training config" in capsys.readouterr().err
