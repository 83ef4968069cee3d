"""The well-known Kineto ``args`` keys, as data: one row per typed column of the ``events`` table.

Each row is ``(column, kineto_key, kind, meaning)``. ``kind`` says how the JSON value is typed:

- ``int``: a JSON integer -> BIGINT. Any other JSON type is an input error naming the event.
- ``str``: a JSON string -> VARCHAR. Any other type is an input error.
- ``float``: a JSON number -> DOUBLE.
- ``int_or_text``: an integer, or a string holding one (Kineto has written both over the years),
  -> BIGINT; a string that is not an integer leaves NULL (the text stays in ``args``).
- ``exact_int``: an integer of any size (``Comms Id`` goes past int64) -> VARCHAR holding its exact
  decimal digits.
- ``json``: any JSON value -> VARCHAR holding its JSON text as written (lists such as ``Input Dims``).
- ``text``: a string or any other JSON value -> VARCHAR: the string itself, or the JSON text of a list.

Every arg, known or not, is also kept verbatim in the ``args`` column as the JSON text the file held.
Adding a column is adding a row here (and bumping ``SCHEMA_VERSION`` in ``run_tables.py``).
"""

from __future__ import annotations

KINETO_ARGS: tuple[tuple[str, str, str, str], ...] = (
    ("external_id", "External id", "int", "links a CPU op, its runtime launch and its GPU kernel"),
    ("correlation", "correlation", "int", "CUDA/HIP correlation id: runtime launch <-> GPU activity"),
    ("stream", "stream", "int_or_text", "GPU stream of a kernel or memcpy"),
    ("device", "device", "int", "GPU device index"),
    ("context", "context", "int", "CUDA context id"),
    ("sequence_number", "Sequence number", "int", "autograd sequence number (forward <-> backward)"),
    ("fwd_thread_id", "Fwd thread id", "int", "thread of the forward op of a backward op"),
    ("record_function_id", "Record function id", "int", "RecordFunction handle"),
    ("python_id", "Python id", "int", "python_function event id"),
    ("python_parent_id", "Python parent id", "int", "parent python_function event id"),
    ("collective_name", "Collective name", "str", "c10d collective of record_param_comms / NCCL kernel"),
    ("in_msg_nelems", "In msg nelems", "int", "input message size, elements"),
    ("out_msg_nelems", "Out msg nelems", "int", "output message size, elements"),
    ("in_split_size", "In split size", "text", "all-to-all input split sizes, JSON text"),
    ("out_split_size", "Out split size", "text", "all-to-all output split sizes, JSON text"),
    ("group_size", "Group size", "int", "number of ranks in the collective's process group"),
    ("dtype", "dtype", "str", "element type of the message (Float, BFloat16, ...)"),
    ("pg_name", "Process Group Name", "str", "c10d process group name"),
    ("pg_desc", "Process Group Description", "str", "c10d process group description"),
    ("pg_ranks", "Process Group Ranks", "text", "global ranks of the group, JSON text"),
    ("pg_id", "Process Group ID", "int", "process group id (2024-era traces)"),
    ("global_rank_start", "Global rank start", "int", "first global rank of a strided group"),
    ("global_rank_stride", "Global rank stride", "int", "stride of a strided group"),
    ("comm_rank", "Rank", "int", "rank that issued the collective"),
    ("seq", "Seq", "int", "collective sequence number within its process group"),
    ("comms_id", "Comms Id", "exact_int", "collective instance id, exact decimal digits"),
    ("src_rank", "Src Rank", "int", "point-to-point source rank"),
    ("dst_rank", "Dst Rank", "int", "point-to-point destination rank"),
    ("bytes", "bytes", "int_or_text", "bytes moved by a memcpy/memset"),
    ("input_dims", "Input Dims", "json", "operator input shapes, JSON text"),
    ("input_type", "Input type", "json", "operator input dtypes, JSON text"),
    ("kernel_name_arg", "kernel", "str", "kernel name given in args (ROCm, Triton)"),
    ("meta_name", "name", "str", "name carried by an 'M' metadata event (process/thread name)"),
    ("sort_index", "sort_index", "int", "display order of an 'M' metadata event"),
    ("labels", "labels", "str", "labels of an 'M' process_labels event"),
)
