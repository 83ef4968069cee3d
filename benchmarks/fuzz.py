"""Fuzz tracekit's ingest for a while: random mutations of the real traces in ../shared/traces, each
checked by the rule of tests/fuzz_mutations.py (an exact ingest, or one line naming the file).

    python benchmarks/fuzz.py --minutes 10 [--seed 1] [--keep DIR]

Prints how many cases ended exact / as clear errors; a case that breaks the rule is written to --keep
(default ./fuzz-failures) with its mutation list, and the run exits 1.
"""

from __future__ import annotations

import argparse
import gzip
import json
import pathlib
import random
import shutil
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.fuzz_mutations import check, mutate

SHARED = ROOT.parent / "shared" / "traces"
KINDS = ["truncate", "flip", "insert", "delete", "duplicate"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--max-mb", type=float, default=2, help="seed traces up to this size (JSON MB)")
    ap.add_argument("--keep", default="fuzz-failures")
    a = ap.parse_args(argv)
    rng = random.Random(a.seed)
    seeds = []
    for p in sorted(SHARED.rglob("*.json*")):
        data = gzip.decompress(p.read_bytes()) if p.name.endswith(".gz") else p.read_bytes()
        if len(data) <= a.max_mb * 1e6:
            seeds.append((p.name, data))
    if not seeds:
        raise SystemExit(f"no seed traces under {SHARED}")
    counts = {"exact": 0, "error": 0}
    end = time.monotonic() + a.minutes * 60
    work = pathlib.Path(tempfile.mkdtemp(prefix="tk-fuzz-"))
    failures = 0
    try:
        while time.monotonic() < end:
            name, data = rng.choice(seeds)
            steps = [(rng.choice(KINDS), rng.random(), rng.randrange(10**6)) for _ in range(rng.randint(1, 3))]
            for kind, at, pick in steps:
                data = mutate(data, kind, at, pick)
            gz = rng.random() < 0.3
            try:
                counts[check(data, work / "case", gz=gz)] += 1
            except Exception as exc:  # noqa: BLE001 - a broken rule, whatever its form, is the finding
                failures += 1
                keep = pathlib.Path(a.keep) / f"case-{failures}"
                keep.mkdir(parents=True, exist_ok=True)
                (keep / "input.json").write_bytes(data)
                (keep / "case.json").write_text(json.dumps({"seed": name, "steps": steps, "gzip": gz,
                                                            "failure": f"{type(exc).__name__}: {exc}"[:2000]}))
                print(f"FAIL {name} {steps}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
            shutil.rmtree(work / "case", ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{sum(counts.values()) + failures} cases in {a.minutes} min: {counts['exact']} exact, "
          f"{counts['error']} clear errors, {failures} broke the rule")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
