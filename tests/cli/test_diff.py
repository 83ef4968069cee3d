"""tracekit diff: a run against itself changes nothing; FSDP against DDP adds the allgathers that the
FSDP traces themselves record."""

import gzip
import json
import pathlib

import tracekit
from tracekit.cli.main import main
from tracekit.compare import diff

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_a_run_against_itself_is_all_zero(capsys):
    run = tracekit.open(ROOT / "examples" / "traces" / "fsdp")
    rows = diff(run, run).to_pylist()
    assert rows and all(r["bytes_delta"] == 0 and r["time_ms_delta"] == 0 and r["exposed_ms_delta"] == 0
                        for r in rows)
    assert all(r["time_ratio"] == 1 for r in rows if r["time_ms_a"])
    assert main(["diff", str(ROOT / "examples" / "traces" / "fsdp"), str(ROOT / "examples" / "traces" / "fsdp"),
                 "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == len(rows)


def test_fsdp_adds_allgathers_over_ddp():
    fsdp = ROOT / "examples" / "traces" / "fsdp"
    recorded = 0  # the allgathers the FSDP traces record, all ranks
    for f in fsdp.rglob("*.json.gz"):
        recorded += sum(1 for e in json.loads(gzip.decompress(f.read_bytes()))["traceEvents"]
                        if e.get("name") == "gloo:all_gather" and e.get("ph") == "X")
    rows = diff(tracekit.open(ROOT / "examples" / "traces" / "ddp"), tracekit.open(fsdp)).to_pylist()
    added = [r for r in rows if r["key"].startswith("allgather") and r["count_a"] is None]
    assert recorded > 0 and sum(r["count_b"] for r in added) == recorded
    assert all(r["bytes_delta"] == r["bytes_b"] > 0 for r in added)
