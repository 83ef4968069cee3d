"""A blocking Gloo send holds its thread until its transfer ends (issue 31, the planted pipeline delay:
advise's saving was half the delay). On the shipped recording examples/traces/planted-pp-delay, rank 0's
sends that end (by its own recorded times) before its thread's next Gloo op starts are blocking; the graph
must hold that next op by the send's transfer, whatever the other rank's clock says of the transfer's
start, and no edge may point a node at itself (a cycle, which made the graph drop such edges)."""

import json
import pathlib

import tracekit

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_a_blocking_send_holds_its_thread_and_no_node_follows_itself(tmp_path):
    run = tracekit.ingest([ROOT / "examples" / "traces" / "planted-pp-delay"], tmp_path / "run", jobs=1)
    assert run.sql("SELECT count(*) AS n FROM graph_edges WHERE src = dst").column("n")[0].as_py() == 0
    # from the raw trace: rank 0's Gloo ops on its step thread, in order; a send that ends before the next
    # op starts blocked its thread
    import gzip

    path = next((ROOT / "examples" / "traces" / "planted-pp-delay").rglob("rank0*.json.gz"))
    events = json.load(gzip.open(path))["traceEvents"]
    ops = sorted((e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("gloo:")),
                 key=lambda e: e["ts"])
    blocking = [(a, b) for a, b in zip(ops, ops[1:], strict=False)
                if a["name"] == "gloo:send" and a["ts"] + a["dur"] < b["ts"]]
    assert len(blocking) >= 4  # (one a pipeline step, at least)
    held = run.sql(
        "SELECT count(*) AS n FROM graph_edges e JOIN graph_nodes t ON t.node_id = e.src AND t.kind = 'transfer' "
        "JOIN graph_nodes a ON a.node_id = e.dst AND a.kind = 'arrive' AND a.rank = t.rank "
        "WHERE t.rank = 0 AND e.kind = 'thread' AND t.name = 'gloo:send'").column("n")[0].as_py()
    assert held >= len(blocking)
