"""An ingest imports what it uses: pyarrow builds tables from Python objects through a pandas check that
imports pandas when installed (0.15 s per process, more than the work on a small trace)."""

import subprocess
import sys

from tests.conftest import write_trace

CODE = """
import sys
from tracekit.cli.main import main
status = main(["ingest", *sys.argv[1:3], "-o", sys.argv[3], "--jobs", "1", "--no-progress"])
heavy = sorted(m for m in ("pandas", "matplotlib", "scipy", "hta", "dask") if m in sys.modules)
print("IMPORTED", heavy)
sys.exit(status)
"""


def test_ingest_never_imports_pandas(tmp_path):
    evs = [{"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float", "pid": 0, "tid": 7,
            "ts": 10 + i, "dur": 0.5, "args": {"correlation": i, "stream": 7}} for i in range(100)]
    evs += [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 9 + i,
             "dur": 0.2, "args": {"correlation": i}} for i in range(100)]
    a = write_trace(tmp_path / "rank0.json", evs, header={"distributedInfo": {"rank": 0, "world_size": 2}})
    b = write_trace(tmp_path / "rank1.json.gz", evs, header={"distributedInfo": {"rank": 1, "world_size": 2}})
    p = subprocess.run([sys.executable, "-c", CODE, str(a), str(b), str(tmp_path / "run")], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    assert "IMPORTED []" in p.stdout, p.stdout
