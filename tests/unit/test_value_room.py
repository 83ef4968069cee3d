"""derive.value_room_mb: memory for the largest text value of the events files a connection reads, from
their Parquet metadata (nothing read). Several files are read in one query of their metadata; the room
must be that of the largest text column chunk of any of them, as pyarrow's reading of each file's
metadata gives it (VALUE_COPIES x its MB), and nothing for ordinary chunks."""

import pyarrow as pa
import pyarrow.parquet as pq

from tracekit.derive import BIG_CHUNK, VALUE_COPIES, value_room_mb


def largest_text_chunk(path) -> int:
    md = pq.read_metadata(path)
    return max(md.row_group(g).column(c).total_uncompressed_size
               for g in range(md.num_row_groups) for c in range(md.row_group(g).num_columns)
               if md.row_group(g).column(c).physical_type == "BYTE_ARRAY")


def test_the_largest_text_chunk_of_several_files(tmp_path):
    small, big = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(pa.table({"name": ["k"] * 10, "ts": list(range(10))}), small)
    pq.write_table(pa.table({"name": ["x" * (20 << 20)], "ts": [1]}), big, compression="zstd")
    chunk = largest_text_chunk(big)
    assert chunk >= BIG_CHUNK
    assert value_room_mb([small, big]) == VALUE_COPIES * (chunk >> 20) == value_room_mb([big])
    assert value_room_mb([small, small]) == 0


def test_a_file_that_cannot_be_read_leaves_the_others(tmp_path):
    big, bad = tmp_path / "b.parquet", tmp_path / "bad.parquet"
    pq.write_table(pa.table({"name": ["x" * (20 << 20)]}), big)
    bad.write_bytes(b"not parquet")
    assert value_room_mb([bad, big]) == VALUE_COPIES * (largest_text_chunk(big) >> 20)
