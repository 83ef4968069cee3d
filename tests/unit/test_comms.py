import pytest

from tracekit.comms.buckets import bucket_rows, human_bytes, parse_edges
from tracekit.comms.dtypes import dtype_bytes
from tracekit.errors import TracekitError


@pytest.mark.parametrize("spelling, size", [
    ("Float", 4), ("float", 4), ("f32", 4), ("BFloat16", 2), ("c10::BFloat16", 2), ("bf16", 2), ("Half", 2),
    ("Float8_e4m3fn", 1), ("Float8_e5m2", 1), ("f8e4m3", 1), ("ComplexFloat", 8), ("c10::complex<double>", 16),
    ("Bool", 1), ("Byte", 1), ("unsigned char", 1), ("UInt32", 4), ("long int", 8), ("Long", 8), ("int8_t", 1),
    ("nonsense", None),
])
def test_dtype_table(spelling, size):
    assert dtype_bytes(spelling) == size


def test_buckets_powers_of_two_and_custom():
    rows = bucket_rows()
    assert rows[0][:3] == (0, 1, "0 B") and rows[17][:3] == (65536, 131072, "64 KiB–128 KiB")
    custom = bucket_rows(parse_edges("1KiB,64KiB,1MiB"))
    assert [r[2] for r in custom] == ["0 B–1 KiB", "1 KiB–64 KiB", "64 KiB–1 MiB", "≥ 1 MiB"]
    assert human_bytes(1536) == "1.5 KiB"
    with pytest.raises(TracekitError, match="cannot read '12 parsecs'"):
        parse_edges("12 parsecs")


def test_every_kernel_suffix_is_a_known_spelling():
    from tracekit.comms.dtypes import KERNEL_SUFFIXES
    assert [s for s in KERNEL_SUFFIXES if dtype_bytes(s) is None] == []
