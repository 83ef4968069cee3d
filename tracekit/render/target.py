"""Where rendered output goes: stdout, or a file replaced whole (written beside it, renamed when complete,
so that a failed write leaves no half file)."""

from __future__ import annotations

import contextlib
import os
import sys


@contextlib.contextmanager
def target(out: str | None, binary: bool):
    if out is None:
        yield sys.stdout.buffer if binary else sys.stdout
        return
    from ..errors import TracekitError

    tmp = os.path.join(os.path.dirname(os.path.abspath(out)), f".{os.path.basename(out)}.tmp-{os.getpid()}")
    try:
        f = open(tmp, "wb" if binary else "w", newline=None if binary else "")
    except OSError as exc:
        raise TracekitError(f"{out}: cannot write it ({exc.strerror}); check that its directory exists and "
                            "is writable") from None
    try:
        with f:
            yield f
        os.replace(tmp, out)
    except OSError as exc:
        raise TracekitError(f"{out}: cannot write it ({exc.strerror})") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
