"""whatif's output before and after a change, on every shipped run and sweep recording (issue 38).

    python benchmarks/whatif_before_after.py c158f43            # the base commit against this tree
    python benchmarks/whatif_before_after.py c158f43 --keep /tmp/ba   # keep the ingests and dumps

For each run under examples/traces (the examples, each plan of the sweeps), in the base commit's tree
(git archive, the compiled extensions copied from this tree) and in this one, in a process of its own:
whatif of the run's own plan (the whole table) and whatif --sweep (every plan for its world), --cores 2
for the sweeps' recordings. Then each table compared field by field: the runs whose tables are the same
to the last digit, and for the others, which fields of which rows differ, the sweep's plans without a
pipeline apart (a change meant for pipelines shows there only as their places). The runs' own paths are
taken out of the notes first (each tree ingests into a directory of its own).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
TRACES = ROOT / "examples" / "traces"

DUMP = r'''
import json, pathlib, sys
import tracekit
from tracekit.commands import whatif as w
traces, out, ing = pathlib.Path(sys.argv[1]), open(sys.argv[2], "w"), pathlib.Path(sys.argv[3])
runs = [(p, None) for p in sorted(traces.iterdir()) if p.is_dir() and not p.name.startswith("sweep")]
for sw in sorted(p for p in traces.iterdir() if p.is_dir() and p.name.startswith("sweep")):
    runs += [(p, 2) for p in sorted(sw.iterdir()) if p.is_dir()]
for p, cores in runs:
    name = f"{p.parent.name}/{p.name}"
    run = tracekit.ingest([p], ing / name, jobs=1)
    for kind, kw in (("own", {}), ("sweep", {"sweep": True})):
        try:
            t = w.whatif(run, cores=cores, **kw)
            rows, meta = t.to_pylist(), {k.decode(): v.decode() for k, v in (t.schema.metadata or {}).items()}
        except Exception as e:  # noqa: BLE001 - a refusal is an output too
            rows, meta = repr(e), {}
        line = json.dumps({"run": name, "kind": kind, "rows": rows, "meta": meta}, default=str)
        out.write(line.replace(str(ing) + "/", "RUN/") + "\n")
'''


def base_tree(commit: str, base: pathlib.Path) -> pathlib.Path:
    """The commit's tree at BASE (git archive), with the compiled extensions built in place here."""
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
    for so in ROOT.glob("tracekit/**/*.so"):
        shutil.copy(so, base / so.relative_to(ROOT))
    return base


def dump(tree: pathlib.Path, out: pathlib.Path, ing: pathlib.Path) -> dict:
    subprocess.run([sys.executable, "-c", DUMP, str(TRACES), str(out), str(ing)], check=True, cwd=tree,
                   env=dict(os.environ, PYTHONPATH=str(tree)))
    return {(r["run"], r["kind"]): r for r in map(json.loads, out.read_text().splitlines())}


def compare(a: dict, b: dict) -> list[str]:
    lines, same = [], 0
    for k in sorted(set(a) | set(b)):
        if a.get(k) == b.get(k):
            same += 1
            continue
        ra, rb = a.get(k, {}).get("rows"), b.get(k, {}).get("rows")
        if not (isinstance(ra, list) and isinstance(rb, list)):
            lines.append(f"{k[0]} {k[1]}: {str(ra)[:80]} -> {str(rb)[:80]}")
        elif k[1] == "own":
            fields = sorted({f"{x.get('group')}/{x.get('collective')}.{f}" for x, y in zip(ra, rb, strict=False)
                             for f in x if x[f] != y.get(f)})
            lines.append(f"{k[0]} own: {ra[0].get('step_ms')} -> {rb[0].get('step_ms')}; differ: {', '.join(fields)}")
        else:
            def key(x):
                return x["plan"], x["micro_batch"], x["micro_batches"]
            da, db = {key(x): x for x in ra}, {key(x): x for x in rb}
            changed = {p: sorted(f for f in da[p] if da[p][f] != db.get(p, {}).get(f)) for p in da}
            changed = {p: v for p, v in changed.items() if v}
            flat = {f for p, v in changed.items() if "pp 1," in p[0] for f in v}
            lines.append(f"{k[0]} sweep: {len(changed)}/{len(da)} plans differ; without a pipeline "
                         f"{sum('pp 1,' in p[0] for p in changed)}, in: {', '.join(sorted(flat)) or '-'}")
    return [f"the same to the last digit: {same} of {len(set(a) | set(b))} tables"] + lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", help="the commit to compare against (e.g. c158f43)")
    ap.add_argument("--keep", default=None, help="a directory to keep the trees' ingests and dumps in")
    args = ap.parse_args(argv)
    work = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="tracekit-before-after-"))
    base = base_tree(args.base, work / "base")
    before = dump(base, work / "before.jsonl", work / "ingest-before")
    after = dump(ROOT, work / "after.jsonl", work / "ingest-after")
    print("\n".join(compare(before, after)))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
