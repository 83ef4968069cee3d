"""A run whose own files were cut short or removed by hand: every command that reads them says so in one
line naming the file and what to do (never 'internal error', exit 70), and `ingest --rederive` refuses,
leaving the run's current version as it was, rather than deriving facts from what is left."""

import pytest

from tests.cli.test_bad_inputs import _two_rank_run
from tests.conftest import live
from tracekit.cli.main import main

AGAIN = ": a file of the run was changed or removed since tracekit wrote it; ingest the traces again with --force\n"


def _cut_short(path):
    path.write_bytes(path.read_bytes()[:100])


def _run_cli(capsys, *args):
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert code != 70 and "internal error" not in err and "\\n" not in err, err
    return code, out, err


@pytest.mark.parametrize("command", [
    ["sql", "{run}", "select count(*) from events"],
    ["timeline", "{run}", "-o", "{tmp}/t.json.gz"], ["report", "{run}", "critical_path"]])
def test_an_events_file_cut_short_is_named(tmp_path, capsys, command):
    """Each ended in 'internal error: InvalidInputException: ... No magic bytes found ...\\n\\nLINE 1: ...'."""
    run = _two_rank_run(tmp_path)
    before = live(run)
    _cut_short(before / "events" / "rank=0" / "part-0.parquet")
    code, _, err = _run_cli(capsys, *[w.format(run=run, tmp=tmp_path) for w in command])
    assert code == 4 and err.startswith(f"error: {run}: its events cannot be read ("), err
    assert "'events/rank=0/part-0.parquet'" in err and err.endswith(AGAIN) and len(err.splitlines()) == 1
    assert live(run) == before
