"""Element types as traces spell them -> (canonical name, bytes per element).

Three spellings reach us: PyTorch ScalarType names in record_param_comms/kernel args ("Float",
"BFloat16"), C++ type names in "Input type" ("float", "c10::BFloat16", "long int"), and NCCL's suffixes
in kernel names ("f32", "bf16", old "float", "int8_t"): KERNEL_SUFFIXES, which the SQL rule reads from
the tk_dtypes table (column kernel_suffix).
"""

from __future__ import annotations

# canonical -> (bytes, spellings)
_TABLE: dict[str, tuple[int, tuple[str, ...]]] = {
    "bool": (1, ("Bool", "bool")),
    "uint8": (1, ("Byte", "unsigned char", "u8", "uint8_t", "uint8")),
    "int8": (1, ("Char", "signed char", "i8", "int8_t", "int8", "char")),
    "int16": (2, ("Short", "short int", "short", "i16", "int16")),
    "uint16": (2, ("UInt16", "unsigned short", "u16", "uint16")),
    "int32": (4, ("Int", "int", "i32", "int32_t", "int32")),
    "uint32": (4, ("UInt32", "unsigned int", "u32", "uint32_t", "uint32")),
    "int64": (8, ("Long", "long int", "long", "int64_t", "i64", "int64")),
    "uint64": (8, ("UInt64", "unsigned long", "u64", "uint64_t", "uint64")),
    "float16": (2, ("Half", "c10::Half", "half", "f16", "float16")),
    "bfloat16": (2, ("BFloat16", "c10::BFloat16", "bf16", "bfloat16", "__nv_bfloat16")),
    "float32": (4, ("Float", "float", "f32", "float32")),
    "float64": (8, ("Double", "double", "f64", "float64")),
    "complex32": (4, ("ComplexHalf", "c10::complex<c10::Half>", "complex32")),
    "complex64": (8, ("ComplexFloat", "c10::complex<float>", "complex64")),
    "complex128": (16, ("ComplexDouble", "c10::complex<double>", "complex128")),
    "float8_e4m3fn": (1, ("Float8_e4m3fn", "c10::Float8_e4m3fn", "f8e4m3", "fp8_e4m3", "float8_e4m3fn")),
    "float8_e4m3fnuz": (1, ("Float8_e4m3fnuz", "c10::Float8_e4m3fnuz", "float8_e4m3fnuz")),
    "float8_e5m2": (1, ("Float8_e5m2", "c10::Float8_e5m2", "f8e5m2", "fp8_e5m2", "float8_e5m2")),
    "float8_e5m2fnuz": (1, ("Float8_e5m2fnuz", "c10::Float8_e5m2fnuz", "float8_e5m2fnuz")),
    "float8_e8m0fnu": (1, ("Float8_e8m0fnu", "c10::Float8_e8m0fnu", "float8_e8m0fnu")),
    "float4_e2m1fn_x2": (1, ("Float4_e2m1fn_x2", "c10::Float4_e2m1fn_x2", "float4_e2m1fn_x2")),
    "qint8": (1, ("QInt8", "c10::qint8")),
    "quint8": (1, ("QUInt8", "c10::quint8")),
    "qint32": (4, ("QInt32", "c10::qint32")),
}

# NCCL's dtype suffixes in kernel names (ncclDevKernel_AllReduce_Sum_f32_RING_LL; before NCCL 2.19
# ncclKernel_..._Sum_float and ..._int8_t), each a spelling above
KERNEL_SUFFIXES = ("f16", "f32", "f64", "bf16", "i8", "u8", "i32", "u32", "i64", "u64", "f8e4m3", "f8e5m2", "half",
                   "float", "double", "int8_t", "uint8_t", "int32_t", "uint32_t", "int64_t", "uint64_t")


def dtype_rows() -> list[tuple[str, str, int, bool]]:
    """(spelling, canonical, bytes, kernel_suffix) for every known spelling, for the tk_dtypes table."""
    rows = []
    for canonical, (size, names) in _TABLE.items():
        for name in (canonical, *names):
            rows.append((name, canonical, size, name in KERNEL_SUFFIXES))
    return sorted(set(rows))


def dtype_bytes(name: str | None) -> int | None:
    for canonical, (size, names) in _TABLE.items():
        if name == canonical or name in names:
            return size
    return None
