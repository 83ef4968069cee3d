"""The dependency graph kept as Parquet, as docs/definitions.md says ("The step as a graph"): written by
`tracekit sql --format parquet`, read back by pyarrow alone, it replays each rank's steps to their
ProfilerStep durations in the raw JSON (the replay keeps each node's measured slack)."""

import gzip
import json
import pathlib

import pyarrow.parquet as pq

import tracekit
from tracekit.cli.main import main
from tracekit.graph import Graph

TRACES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "traces" / "planted-ddp-delay"


def test_the_graph_as_parquet_replays_the_recorded_steps(tmp_path):
    tracekit.ingest([TRACES], tmp_path / "run", jobs=1)
    for view in ("graph_nodes", "graph_edges"):
        assert main(["sql", str(tmp_path / "run"), f"SELECT * FROM {view}", "--format", "parquet",
                     "-o", str(tmp_path / f"{view}.parquet")]) == 0
    g = Graph.from_tables(pq.read_table(tmp_path / "graph_nodes.parquet"),
                          pq.read_table(tmp_path / "graph_edges.parquet"))
    r = g.replay()
    got = {}
    for i in range(g.nodes):
        if g.kind[i] in ("step_start", "step_end"):
            got.setdefault((int(g.rank[i]), g.name[i]), {})[g.kind[i]] = i
    recorded = {}
    for path in TRACES.rglob("rank*_trace.json.gz"):
        rank = json.load(gzip.open(path))
        r_no = int(rank["distributedInfo"]["rank"])
        for e in rank["traceEvents"]:
            if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"):
                recorded[(r_no, e["name"])] = round(e["dur"] * 1000)
    assert recorded and set(recorded) == set(got)
    for key, ns in recorded.items():
        ends = got[key]
        assert int(r.end_ns[ends["step_end"]] - r.start_ns[ends["step_start"]]) == ns, key
