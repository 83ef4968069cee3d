"""tracekit.arrow_columns: columns built by their buffers read back as the Python values given (nulls,
empty values, text beyond ASCII), and building them imports no pandas (what they are for)."""

import subprocess
import sys

import pyarrow as pa

from tracekit.arrow_columns import int64_column, int64_lists, string_column


def test_the_columns_hold_the_values_given():
    ints = [3, None, -(2**63), 2**63 - 1, 0]
    texts = ["default_pg", None, "", "héllo wörld ✓", "x" * 1000]
    lists = [[0, 1, 2, 3], None, [], [-5], list(range(300))]
    for build, values, kind in ((int64_column, ints, pa.int64()), (string_column, texts, pa.string()),
                                (int64_lists, lists, pa.list_(pa.int64()))):
        column = build(values)
        column.validate(full=True)
        assert column.type == kind and column.to_pylist() == values and column.null_count == 1
        assert build([v for v in values if v is not None]).null_count == 0
        assert build([]).to_pylist() == []


def test_building_them_imports_no_pandas():
    code = ("import sys; from tracekit.arrow_columns import *; "
            "int64_lists([[1], None]).take(int64_column([1, 0])); string_column(['a', None]); "
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
