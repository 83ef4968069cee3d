"""Build large traces for the ingest benchmark by repeating a real trace's event array.

Each copy of the events is shifted in time past the previous one and numbers its ProfilerSteps after
the previous copy's (so the result is still a plausible timeline: a trace five times as long holds five
times the steps, and numbers the ids that link events after the previous copy's), and the file keeps the
source's metadata. Written as plain JSON: both tools read the same
bytes, and gzip's own cost (the same for both) does not blur the parser comparison.

    python benchmarks/build_traces.py SRC.json.gz OUT.json TARGET_MB
"""

from __future__ import annotations

import gzip
import re
import sys


def build(src: str, out: str, target_mb: float) -> int:
    op = gzip.open if src.endswith(".gz") else open
    with op(src, "rb") as f:
        text = f.read()
    m = re.search(rb'"traceEvents"\s*:\s*\[', text)
    end = text.rindex(b"]")
    head, body, tail = text[: m.end()], text[m.end(): end].strip(), text[end:]
    body = body.rstrip(b",")
    copies = max(1, round(target_mb * 1e6 / len(body)))
    ts = re.compile(rb'"ts": ?(\d+)')
    stamps = [int(x) for x in ts.findall(body)]
    span = (max(stamps) - min(stamps) + 1_000_000) if stamps else 0
    # a trace n times as long holds n times the steps: copy i numbers its ProfilerSteps after copy i-1's
    step = re.compile(rb"ProfilerStep#(\d+)")
    numbers = [int(x) for x in step.findall(body)]
    nsteps = (max(numbers) - min(numbers) + 1) if numbers else 0
    # ... and its own ids: the ids that link events (launch <-> kernel, op <-> launch, flows) are shifted
    # past the previous copy's, as a longer profile would number them
    ids = re.compile(rb'"(correlation|External id|Python id|Python parent id|Record function id|id)": ?(\d+)')
    id_span = max((int(m.group(2)) for m in ids.finditer(body)), default=0) + 1
    with open(out, "wb") as f:
        f.write(head)
        for i in range(copies):
            if i:
                f.write(b",\n")
                # (each substitution runs within this iteration; the default arguments bind its values)
                text = ts.sub(lambda mm, d=i * span: b'"ts": ' + str(int(mm.group(1)) + d).encode(), body)
                text = step.sub(lambda mm, d=i * nsteps: b"ProfilerStep#" + str(int(mm.group(1)) + d).encode(), text)
                f.write(ids.sub(lambda mm, d=i * id_span: mm.group(1).join((b'"', b'": '))
                                + str(int(mm.group(2)) + d).encode(), text))
            else:
                f.write(body)
        f.write(b"\n" + tail)
    return copies


if __name__ == "__main__":
    n = build(sys.argv[1], sys.argv[2], float(sys.argv[3]))
    print(f"{sys.argv[2]}: {n} copies of {sys.argv[1]}")
