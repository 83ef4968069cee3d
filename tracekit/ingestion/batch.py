"""A batch of decoded events, as the reader hands it to columns.py, and the error that names a badly typed
event of one (both sides raise it)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import TraceFormatError


@dataclass
class EventBatch:
    start: int  # index of the first event in the file's traceEvents
    events: list  # list[TraceEvent]
    extra: list | None  # per event: JSON text of unknown top-level keys, or None


_AT = re.compile(r"at `\$\[(\d+)\](.*)`")

_EXPECT = {"ph": "a string", "name": "a string", "cat": "a string", "ts": "a number (microseconds)",
           "dur": "a number (microseconds)", "args": "an object"}


def type_error(path: str, start: int, msg: str, args: bool = False) -> TraceFormatError:
    """A msgspec ValidationError ('Expected `str`, got `int` - at `$[12].ph`') of a batch whose first
    event is #start -> an error naming the event and the field. ``args``: the batch was of args objects."""
    m = _AT.search(msg)
    what = msg.split(" - at ")[0]
    if not m:
        return TraceFormatError(f"{path} (event #{start} of traceEvents): wrong type: {msg}")
    field = m.group(2).lstrip(".") or "the event"
    if args:
        place = f"args['{field}']"
    else:
        expect = _EXPECT.get(field.split(".")[0], "")
        place = f"'{field}' should be {expect}" if expect else f"at '{field}'"
    return TraceFormatError(f"{path} (event #{start + int(m.group(1))} of traceEvents): wrong type: {place}: "
                            f"{what}. Fix or drop that event")
