"""A rank part's part.json read and checked, and the scratch a part (or a group of parts) is built in and
renamed into place from: what rank_part.py (the writer), part_groups.py and reduce_parts.py share, below
all three.
"""

from __future__ import annotations

import contextlib
import os
import shutil

import msgspec

from ..layout.paths import PART_FILE, part_scratch

PART_FORMAT = "tracekit rank part"


@contextlib.contextmanager
def locked_scratch(run: str, tag: str):
    """A scratch directory in ``run``'s parts, held by a lock while it is built (a reduce removes only
    scratch no living writer holds), removed if the build fails: a part's, or a group's (part_groups.py)."""
    from ..layout.versions import lock_exclusive

    scratch = part_scratch(run, tag)
    os.mkdir(scratch)
    held = lock_exclusive(scratch)
    try:
        yield scratch
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    finally:
        if held is not None:
            os.close(held)


def put_in_place(run: str, scratch: str, dest: str, tag: str) -> None:
    """``scratch`` renamed to ``dest`` whole; a ``dest`` already there is moved aside first, then removed."""
    old = None
    if os.path.isdir(dest):
        old = part_scratch(run, f"old-{tag}")
        os.rename(dest, old)
    os.rename(scratch, dest)
    if old:
        shutil.rmtree(old, ignore_errors=True)


def read_part(directory: str, key: str | None = None) -> dict:
    """The part.json of a rank part, checked: a clear error names the part and what to do. ``key``: this
    tracekit's part_key() (computed once for many parts: it reads the catalogues, 3 ms a part)."""
    from ..errors import RunError
    from ..rules import part_key
    from ..run_tables import SCHEMA_VERSION

    try:
        with open(os.path.join(directory, PART_FILE), "rb") as f:
            doc = _decode(f.read())
    except (OSError, msgspec.DecodeError) as exc:
        raise RunError(f"{directory}: a rank part that cannot be read ({exc}); make it again from its trace "
                       "(python -m tracekit.ingestion.rank_part TRACE RUN) or remove it") from None
    if not isinstance(doc, dict) or doc.get("format") != PART_FORMAT:
        raise RunError(f"{directory}: not a rank part tracekit wrote; remove it")
    if doc.get("schema_version") != SCHEMA_VERSION or doc.get("facts_key") != (key or part_key()):
        raise RunError(f"{directory}: a rank part made by another tracekit ({doc.get('tracekit_version')}, other "
                       "rules); make it again from its trace with this one (python -m tracekit.ingestion.rank_part "
                       f"{doc.get('trace', {}).get('path', 'TRACE')} RUN)")
    return doc


def _decode(text: bytes):
    """part.json's document, each process group left as its JSON text (msgspec.Raw): the reduce only writes
    them to the process_groups table, and decoded, a job's groups are every rank's list of every group's
    ranks (the default group's 4,096 ranks in each of 4,096 parts: 16.7M Python ints, 0.6 GB, held
    through the reduce)."""
    try:
        doc = msgspec.json.decode(text, type=dict[str, msgspec.Raw])
    except msgspec.ValidationError:  # JSON, not an object: read_part says it is no part
        return msgspec.json.decode(text)
    out = {}
    for k, v in doc.items():
        if k == "process_groups":
            try:
                out[k] = msgspec.json.decode(v, type=list[msgspec.Raw])
                continue
            except msgspec.ValidationError:
                pass
        out[k] = msgspec.json.decode(v)
    return out


def link_or_copy(src: str, dst: str) -> None:
    """``src`` hard-linked at ``dst`` (a copy on a file system without hard links); FileNotFoundError
    where ``src`` is gone."""
    try:
        os.link(src, dst)
    except FileNotFoundError:
        raise
    except OSError:
        shutil.copyfile(src, dst)
