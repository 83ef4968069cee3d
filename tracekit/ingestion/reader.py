"""Split the ``traceEvents`` array of a trace into batches of decoded events, in bounded memory.

A Kineto trace is one JSON object whose ``traceEvents`` array holds every event. We never hold the
whole text: we read a chunk, cut it after the last ``}`` that closes a top-level event (``},{`` or
``}]``), and decode ``[`` + that slice + ``]`` with msgspec in one C call. A ``}`` that only closes a
nested object, or one inside a string, cannot end a balanced array, so the decode says "truncated"
(or fails at the closing ``]`` we added) and we try the previous candidate. Any other decode error is
a real defect of the file, reported with its absolute byte offset.

The top-level keys around the array (``distributedInfo`` before it, ``baseTimeNanoseconds`` often
after it) are decoded at the end as ``prefix + "traceEvents":[] + suffix``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

import msgspec

from ..errors import TraceFormatError
from . import fast
from .batch import EventBatch, type_error
from .schema import TraceEvent
from .source import TraceSource

CHUNK_BYTES = 4 << 20
TRUNCATED = "(file truncated? a profiler killed or still writing leaves one: let it finish, or profile again)"
_MAX_HEADER = 256 << 20  # most bytes of top-level metadata before and after the traceEvents array


def max_event_limit() -> int:
    """Bytes one event (or the whitespace between two) may take: $TRACEKIT_MAX_EVENT_MB, default 64.
    Past it the file is refused with a clear error, so that memory stays bounded on hostile input: derive
    holds a few copies of an event's largest value (docs/ingest.md, Memory)."""
    from .. import settings
    return settings.max_event_bytes()


_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_POS = re.compile(r"\(byte (\d+)\)")

_events_decoder = msgspec.json.Decoder(list[TraceEvent])
_TOO_DEEP = ("holds a value nested deeper than the JSON decoder allows (about 1,000 levels of arrays or "
             "objects); no Kineto trace does: the file is damaged or not a trace")
_loose_decoder = msgspec.json.Decoder(list[dict[str, msgspec.Raw]])


@dataclass
class Chunk:
    """Framed, not yet decoded events (the fast path): ``text`` is ``ev, ev, ...`` as in the file."""
    start: int  # index of its first event in the file's traceEvents
    offset: int  # byte offset of text[0] in the JSON text
    text: memoryview  # of the reader's buffer, which it no longer changes
    events: int  # how many events the framer counted


class TraceReader:
    """Iterate over ``EventBatch``es; afterwards ``header`` holds the top-level metadata."""

    def __init__(self, path: str, chunk_bytes: int = CHUNK_BYTES, max_event_bytes: int | None = None,
                 frame: bool = False):
        self.path = path
        self.frame = frame and fast.enabled()  # yield Chunks framed in C where it finds a boundary
        self.chunk_bytes = chunk_bytes
        self.max_event_bytes = max_event_bytes or max_event_limit()
        self.source = TraceSource(path)
        self.header: dict = {}
        self.array_format = False  # Chrome's JSON Array Format: the file is the event list itself
        self.event_count = 0
        self.sha256 = ""

    # -- helpers ---------------------------------------------------------------------------------
    def _fail(self, what: str, offset: int | None = None, index: int | None = None) -> TraceFormatError:
        where = []
        if index is not None:
            where.append(f"event #{index} of traceEvents")
        if offset is not None:
            where.append(f"byte {offset:,} of the JSON text")
        place = f" ({', '.join(where)})" if where else ""
        return TraceFormatError(f"{self.path}{place}: {what}")

    def _more(self) -> bytes:
        return self.source.read(self.chunk_bytes)

    # -- the main loop ---------------------------------------------------------------------------
    def __iter__(self) -> Iterator[EventBatch]:
        try:
            yield from self._run()
        finally:
            self.source.close()

    def close(self) -> None:
        """Close the file (and stop its threads) even if the iteration was left half way."""
        self.source.close()

    def _run(self) -> Iterator[EventBatch]:
        buf, prefix_end, pos, base = self._find_array()  # base: absolute offset of buf[0]
        prefix = b"" if self.array_format else bytes(buf[:prefix_end])
        index = 0
        stalled = 0  # reads since the last cut
        buf, base, eof = self._skip_space(buf, pos, base, "before the first event")
        pos = 0
        if buf[:1] == b"]":  # empty array
            self._finish(prefix, buf, 1, base)
            return
        while True:
            found = self._fast_cut(buf, pos, base, index) if self.frame else None
            if found is None:
                found = self._first_cut(buf, pos, base, index, eof)
            if found is not None:
                batch, nxt, is_end = found
                yield batch
                index += batch.events if isinstance(batch, Chunk) else len(batch.events)
                self.event_count = index
                if is_end:
                    self._finish(prefix, buf, nxt + 1, base)
                    return
                pos = nxt
                stalled = 0
            elif eof:
                self._raise_unterminated(buf, pos, base, index)
            else:
                stalled += 1
            if eof:
                continue
            if pos:  # keep memory bounded: drop what was decoded (a Chunk may still hold a view of the old buffer)
                buf = bytearray(memoryview(buf)[pos:])
            base += pos
            pos = 0
            if stalled and len(buf) >= self.max_event_bytes:
                raise self._fail(
                    f"one event (or the space between two) is longer than {self.max_event_bytes >> 20} MB; no "
                    "profiler writes such events, so the file is damaged or hostile. If it is real, raise the "
                    f"limit (ingest then needs about 10 times it in memory): "
                    f"TRACEKIT_MAX_EVENT_MB={2 * (self.max_event_bytes >> 20)}", offset=base, index=index)
            # no cut in what we hold: read as much again as we hold, so that a long event costs
            # O(log size) attempts, not one per chunk
            want = max(self.chunk_bytes, len(buf)) if stalled else self.chunk_bytes
            data = self.source.read(max(1, min(want, self.max_event_bytes - len(buf) + self.chunk_bytes)))
            eof = not data
            buf += data

    def _fast_cut(self, buf, pos, base, index):
        """The latest event boundary, found by the C framer (which follows nesting and strings): (Chunk,
        next, is_end), or None, and then the Python path looks (it also names what is wrong)."""
        found = fast.frame(buf, pos)
        if found is None:
            return None
        cut, nxt, is_end, events = found
        return Chunk(index, base + pos, memoryview(buf)[pos:cut + 1], events), nxt, is_end

    def decode_chunk(self, chunk: Chunk) -> EventBatch | None:
        """A Chunk the C scanner declined, decoded by the Python path (None: it does not end at an event
        boundary, which the framer only gets wrong on malformed text)."""
        return self._decode(chunk.text, 0, len(chunk.text) - 1, chunk.offset, chunk.start)

    def _first_cut(self, buf, pos, base, index, eof):
        """The latest cut after which ``buf[pos:cut]`` decodes as whole events: (batch, next, is_end), or
        None. Candidates are tried latest first at exponentially growing distance (1st, 2nd, 4th, 8th,
        ...): a failed decode means that '}' closed a nested object or sat in a string, and any earlier
        event boundary will do, so a batch costs O(log k) decodes, never one per '}'. At the end of the
        file every candidate is tried, latest first, before the file is called unterminated."""
        cands = _candidates(buf, pos, open_end=eof and self.array_format)
        seen: list = []
        probe = 0
        while True:
            while len(seen) <= probe:
                c = next(cands, None)
                if c is None:
                    break
                seen.append(c)
            if probe >= len(seen):
                break
            cut, nxt, is_end = seen[probe]
            batch = self._decode(buf, pos, cut, base, index)
            if batch is not None:
                return batch, nxt, is_end
            probe = probe * 2 + 1
        if not eof:
            return None
        for cut, nxt, is_end in seen + list(cands):  # the end: leave no boundary untried
            batch = self._decode(buf, pos, cut, base, index)
            if batch is not None:
                return batch, nxt, is_end
        return None

    def _skip_space(self, buf, pos: int, base: int, where: str):
        """Drop the whitespace from ``buf[pos]`` on, reading while it lasts, in time linear in its length
        and under the per-event cap: -> (buf, base, eof), ``buf[0]`` the first other byte (``buf`` empty
        at the end of the file), ``base`` its absolute offset."""
        skipped, began = 0, base + pos
        while True:
            p = _skip_ws(buf, pos)
            skipped += p - pos
            if skipped > self.max_event_bytes:
                raise self._fail(
                    f"more than {self.max_event_bytes >> 20} MB of whitespace {where}; no profiler writes that, so "
                    "the file is damaged or hostile (TRACEKIT_MAX_EVENT_MB sets the limit)", offset=began)
            if p < len(buf):
                return (buf if p == 0 else bytearray(memoryview(buf)[p:])), base + p, False
            base += len(buf)
            data = self._more()
            if not data:
                return bytearray(), base, True
            buf, pos = bytearray(data), 0

    def _find_array(self):
        """-> (buf, end of the metadata before the key, position after the array's '[', offset of buf[0])."""
        buf, base, eof = self._skip_space(bytearray(self._more()), 0, 0, "before the JSON text")
        if eof:
            raise self._fail("the file is empty; it holds no JSON at all (a profiler killed or still writing "
                             "leaves one): profile again")
        if buf[0] == ord("["):  # Chrome's JSON Array Format
            buf, base, _ = self._skip_space(buf, 1, base, "after the opening '['")
            if not buf or buf[0] in b"{]":
                self.array_format = True
                return buf, None, 0, base
            found = bytes(buf[:20]).decode("utf-8", "replace")
            raise self._fail(
                "this JSON array holds no event objects: an array-format trace (Chrome's JSON Array Format) is "
                f"a list of {{...}} events, this one starts with {found!r}. Pass the "
                ".json/.json.gz files that torch.profiler wrote", offset=base)
        if buf[0] != ord("{"):
            raise self._fail(
                "this is not a trace: a PyTorch Profiler trace is a JSON object starting with '{', "
                f"found {bytes(buf[:20])!r}. Pass the .json/.json.gz files that torch.profiler wrote",
                offset=base)
        searched = 0  # every key candidate before it has been tried
        while True:
            m, searched = self._top_level_key(buf, searched)
            if m:
                return buf, m.start(), m.end(), base
            if len(buf) > _MAX_HEADER:
                raise self._fail(
                    f"more than {_MAX_HEADER >> 20} MB of JSON before the \"traceEvents\" array: the top-level "
                    "metadata of a trace is a few KB, so the file is damaged or not a trace")
            data = self._more()
            if not data:
                raise self._fail(
                    "this JSON has no \"traceEvents\" array, so it is not a Chrome/Kineto trace. "
                    "Pass the .json/.json.gz files that torch.profiler wrote")
            buf += data

    def _top_level_key(self, buf, start: int = 0):
        """The first "traceEvents": [ at or after ``start`` that is a key of the top-level object, not of a
        nested one (a header may hold its own "traceEvents", e.g. under distributedInfo): the text before a
        top-level key, closed with an empty array and '}', is a whole JSON object. -> (match or None, where
        the next search of a longer buffer starts: a candidate that failed fails again, as its text before
        is the same, and only one cut short by the buffer's end is looked at again)."""
        for m in _KEY.finditer(buf, start):
            try:
                msgspec.json.decode(bytes(buf[:m.start()]) + b'"traceEvents":[]}')
            except RecursionError:
                raise self._fail("the metadata before traceEvents " + _TOO_DEEP) from None
            except msgspec.DecodeError:
                start = m.end()
                continue
            return m, start
        tail = max(start, len(buf) - len(b'"traceEvents"'))
        k = buf.rfind(b'"traceEvents"', start)
        if k >= 0 and not bytes(buf[k + 13:]).strip(b" \t\r\n:"):  # the key, then perhaps ':', at the end
            tail = min(tail, k)
        return None, tail

    def _decode(self, buf, pos, cut, base, index) -> EventBatch | None:
        body = b"[" + memoryview(buf)[pos:cut + 1] + b"]"
        try:
            return EventBatch(index, _events_decoder.decode(body), None)
        except RecursionError:
            k, at = _deepest(body)
            raise self._fail(_TOO_DEEP, offset=base + pos + at - 1, index=index + k) from None
        except msgspec.ValidationError as exc:
            msg = str(exc)
            if "unknown field" in msg:
                return self._decode_loose(body, index, base + pos)
            raise type_error(self.path, index, msg) from None
        except msgspec.DecodeError as exc:
            msg = str(exc)
            if _ends_early(msg, len(body)) or "trailing characters" in msg:
                return None  # that '}' closed a nested object or sat in a string, or came after the array's end
            raise self._fail(f"malformed JSON: {msg.split(' (byte')[0]}", offset=base + pos + _byte(msg)) from None

    def _decode_loose(self, body, index, offset) -> EventBatch | None:
        """Slow path for events with non-standard top-level keys: keep those keys in `extra`. Every value
        stays raw JSON text (msgspec.Raw), so nothing is re-encoded: the known keys are decoded exactly
        as on the fast path, the unknown ones kept byte for byte."""
        try:
            raw = _loose_decoder.decode(body)
        except RecursionError:
            k, at = _deepest(body)
            raise self._fail(_TOO_DEEP, offset=offset + at - 1, index=index + k) from None
        except msgspec.ValidationError as exc:
            raise type_error(self.path, index, str(exc)) from None
        except msgspec.DecodeError as exc:  # the same cases as on the fast path
            msg = str(exc)
            if _ends_early(msg, len(body)) or "trailing characters" in msg:
                return None
            raise self._fail(f"malformed JSON: {msg.split(' (byte')[0]}", offset=offset + _byte(msg)) from None
        extra = []
        known = set(TraceEvent.__struct_fields__)
        parts = []
        for ev in raw:
            other = [(k, v) for k, v in ev.items() if k not in known]
            extra.append(_object(other) if other else None)
            parts.append(_object([(k, v) for k, v in ev.items() if k in known]))
        try:
            events = msgspec.json.decode(b"[" + b",".join(parts) + b"]", type=list[TraceEvent])
        except msgspec.ValidationError as exc:
            raise type_error(self.path, index, str(exc)) from None
        except msgspec.DecodeError as exc:  # a value the raw pass did not read, e.g. invalid UTF-8
            bad = next((i for i, part in enumerate(parts) if not _decodes(part)), 0)
            raise self._fail(f"malformed JSON: {str(exc).split(' (byte')[0]}", index=index + bad) from None
        texts = []
        for i, e in enumerate(extra):
            try:
                texts.append(e.decode() if e is not None else None)
            except UnicodeDecodeError:
                raise self._fail("invalid UTF-8 in the value of a non-standard key; fix or drop that event",
                                 index=index + i) from None
        return EventBatch(index, events, texts)

    def _raise_unterminated(self, buf, pos, base, index):
        tail = bytes(buf[pos:pos + 60]).strip()
        if not tail:
            raise self._fail("the JSON text ends inside the traceEvents array " + TRUNCATED + "; "
                             "expected ']' to close it", offset=base + len(buf), index=index)
        # Let msgspec say exactly where the damage is.
        try:
            _events_decoder.decode(b"[" + bytes(buf[pos:]) + b"]")
        except msgspec.ValidationError as exc:
            raise type_error(self.path, index, str(exc)) from None
        except msgspec.DecodeError as exc:
            msg = str(exc)
            if _ends_early(msg, len(buf) - pos + 2):
                raise self._fail(
                    "the JSON text ends in the middle of an event " + TRUNCATED,
                    offset=base + len(buf), index=index) from None
            raise self._fail(f"malformed JSON: {msg.split(' (byte')[0]}", offset=base + pos + _byte(msg)) from None
        raise self._fail("the traceEvents array is not closed with ']' " + TRUNCATED,
                         offset=base + len(buf), index=index)

    def _finish(self, prefix: bytes, buf, suffix_start: int, base: int):
        rest = bytearray(buf[suffix_start:])
        while data := self._more():
            rest += data
            if len(rest) > _MAX_HEADER:
                raise self._fail("more than 256 MB of JSON after the traceEvents array", offset=base + suffix_start)
        self.sha256 = self.source.finish()
        if self.array_format:
            if rest.strip() not in (b"", b","):
                raise self._fail("unexpected text after the event array: "
                                 f"{bytes(rest.strip()[:40])!r}", offset=base + suffix_start)
            self.header = {}
            return
        text = prefix + b'"traceEvents":0' + bytes(rest)  # 0: a later "traceEvents" key would replace it
        try:
            header = msgspec.json.decode(text)
        except RecursionError:
            raise self._fail("the top-level metadata around traceEvents " + _TOO_DEEP) from None
        except msgspec.DecodeError as exc:
            msg = str(exc)
            if "truncated" in msg:
                raise self._fail("the JSON text ends before the closing '}' of the trace object " + TRUNCATED,
                                 offset=base + len(buf)) from None
            raise self._fail(f"malformed JSON around the traceEvents array: {msg}") from None
        if not isinstance(header, dict):
            raise self._fail("the top level of the JSON is not an object")
        if header.pop("traceEvents", 0) != 0:
            raise self._fail("the trace object has two \"traceEvents\" keys: trace viewers (JSON.parse) and "
                             "Python's json take the last one, a streaming reader the first; keep one of them",
                             offset=base + suffix_start)
        self.header = header


_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{},]')


def _deepest(body) -> tuple[int, int]:
    """In ``[event, event, ...]``: which event nests deepest (its position in the list, and the byte
    where it starts in ``body``), to name the event that the decoder found too deep (not its batch's first)."""
    depth = deepest = element = 0
    start = found = (0, 1)
    for m in _TOKENS.finditer(body):
        c = m.group()[:1]
        if c in b"[{":
            depth += 1
            if depth > deepest:
                deepest, found = depth, start
        elif c in b"]}":
            depth -= 1
        elif c == b"," and depth == 1:
            element += 1
            start = (element, m.end())
    return found


def _decodes(part: bytes) -> bool:
    try:
        msgspec.json.decode(part, type=TraceEvent)
        return True
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False


def _object(items) -> bytes:
    """A JSON object from (key, raw JSON value) pairs, the values' text untouched."""
    return b"{" + b",".join(msgspec.json.encode(k) + b":" + bytes(v) for k, v in items) + b"}"


def _ends_early(msg: str, body_len: int) -> bool:
    """A decode error of '[' + text + ']' that only says the text stopped inside a value: truncated,
    or failing at the ']' we added (the cut fell inside a nested object or a string)."""
    m = _POS.search(msg)
    return "truncated" in msg or (m is not None and int(m.group(1)) >= body_len - 1)


def _byte(msg: str) -> int:
    """Offset in the text of the byte a decode error names (it counts the '[' we added)."""
    m = _POS.search(msg)
    return int(m.group(1)) - 1 if m else 0


_NON_WS = re.compile(rb"[^ \t\r\n]")


def _skip_ws(buf, i: int) -> int:
    """The first non-whitespace position at or after i (len(buf) if none), at C speed: a file may hold
    gigabytes of whitespace."""
    m = _NON_WS.search(buf, i)
    return m.start() if m else len(buf)


# A boundary between two events: '}' then ',' then '{' opening an object whose first key starts ('"').
# Inside a JSON string a '"' is escaped, so a string full of "},{" holds one candidate at most (at its
# closing quote), not one per "},{".
_BOUNDARY = re.compile(rb'\}[ \t\r\n]*(?:,[ \t\r\n]*\{[ \t\r\n]*"|\])')


def _candidates(buf, lo: int, open_end: bool = False):
    """Yield (cut, next, is_end), latest first: `cut` is a '}' followed by ',' + '{' (the next event) or
    by ']'. Found by a regex over windows growing back from the end, so the cost is in C and in
    proportion to how far back the search has to go.

    With ``open_end`` (the end of a file in Chrome's array format, whose closing ']' may be missing) the
    last '}' before only whitespace (and a trailing comma) also ends the array.
    """
    hi = len(buf)
    last = buf.rfind(b"}", lo, hi)
    if open_end and last >= lo and bytes(buf[last + 1:]).strip() in (b"", b","):
        yield last, hi, True
        hi = last
    end, width = hi, 1 << 16
    while end > lo:
        begin = max(lo, end - width)
        found = [m for m in _BOUNDARY.finditer(buf, begin, hi) if m.start() < end]
        for m in reversed(found):
            text = m.group()
            if text.endswith(b"]"):
                yield m.start(), m.end() - 1, True
            else:
                yield m.start(), m.start() + text.rindex(b"{"), False
        end, width = begin, width * 4
