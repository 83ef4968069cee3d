"""Hypothesis over mutations of real traces (truncation, flips, inserted tokens such as '},{', invalid
UTF-8, huge integers and deep nesting, deletions, duplications; plain and gzip): every outcome is an
exact ingest or a one-line error naming the file (tests/fuzz_mutations.py). Longer runs:
`python benchmarks/fuzz.py --minutes 10`."""

import gzip
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import shared_traces
from tests.fuzz_mutations import check, mutate

SEEDS = ["hta_edge_cases/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
         "hta_edge_cases/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
         "hta_edge_cases/large_integer_trace/rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz"]
_count = itertools.count()


def seed_text(i: int) -> bytes:
    return gzip.decompress((shared_traces() / SEEDS[i]).read_bytes())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, len(SEEDS) - 1),
       steps=st.lists(st.tuples(st.sampled_from(["truncate", "flip", "insert", "delete", "duplicate"]),
                                st.floats(0, 1), st.integers(0, 10**6)), min_size=1, max_size=3),
       gz=st.booleans())
@pytest.mark.slow  # hundreds of mutated traces ingested
def test_every_mutation_is_exact_or_a_clear_error(tmp_path, seed, steps, gz):
    data = seed_text(seed)
    for kind, at, pick in steps:
        data = mutate(data, kind, at, pick)
    check(data, tmp_path / f"case{next(_count)}", gz=gz)


def test_the_unmutated_seeds_ingest_exactly(tmp_path):
    for i in range(len(SEEDS)):
        assert check(seed_text(i), tmp_path / f"seed{i}") == "exact"
