"""A task that outlives its ingest (a Dask worker keeps running when its scheduler dies mid-ingest) must
not bring back the build the ingest removed: seen in CI as a stray version (then ``.run.v-PID-NS``) after
test_dask_faults' scheduler kill. Here the task's two halves run by hand around the ingest's cleanup."""

import os

import pytest

from tests.conftest import dist, write_trace
from tests.tracegen import kernel, step
from tracekit.derive import derive_rank
from tracekit.ingestion.one_file import ingest_file
from tracekit.layout.paths import part_facts_dir, staging_part
from tracekit.layout.versions import discard, version_dir


def test_a_task_finishing_after_its_build_was_discarded_leaves_nothing(tmp_path):
    trace = tmp_path / "rank0.json"
    write_trace(trace, [step(1, 0, 100), *kernel("gemm", 1, 5, launch=(0, 1))], header=dist(0, world=1))
    out = str(tmp_path / "run")
    build = version_dir(out)
    os.makedirs(os.path.dirname(staging_part(build, 0)))
    part = staging_part(build, 0)
    res = ingest_file(str(trace), part, rank=0)  # the task parsed its file ...
    discard(build)  # ... when the ingest that asked for it gave up
    with pytest.raises(OSError):  # its facts have nowhere to go
        derive_rank(res.parts, 0, res.trace, res.process_groups, part_facts_dir(part))
    assert sorted(os.listdir(tmp_path / "run")) == ["versions"]  # no version came back, no trash left
    assert os.listdir(tmp_path / "run" / "versions") == []
