"""Build the list of every GPU kernel name in ../shared/traces with its kind (golden file writer).

    python -m tests.conformance.kernel_kinds > tests/data/kernel_kinds.csv
"""

import csv
import sys

import tracekit
from tests.conftest import shared_traces


def kernel_kinds(tmpdir) -> list[tuple[str, str, str]]:
    out = set()
    files = sorted(p for p in shared_traces().rglob("*") if p.name.endswith((".json", ".json.gz")))
    for i, path in enumerate(files):
        run = tracekit.ingest([path], f"{tmpdir}/k{i}", ranks={str(path): 0}, jobs=1)
        for name, cat, kind in run.con.execute("SELECT DISTINCT name, cat, kind FROM gpu_kernels").fetchall():
            out.add((name, cat, kind))
        run.close()
    return sorted(out)


if __name__ == "__main__":
    import tempfile
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(["name", "cat", "kind"])
    with tempfile.TemporaryDirectory() as d:
        w.writerows(kernel_kinds(d))
