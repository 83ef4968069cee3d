"""Fuzz tracekit for a while: random mutations of the real traces in ../shared/traces, each checked by
the rule of tests/fuzz_mutations.py (an exact ingest, or one line naming the file); and the attack classes
of tests/fuzz_attacks.py: SQL through the read-only prompt, odd run and cache path names, processes racing
on one cached run (a right answer or one line, the run unchanged, nothing written outside).

    python benchmarks/fuzz.py --minutes 10 [--seed 1] [--keep DIR] [--classes trace,sql,path,concurrency]

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
from tests import fuzz_attacks
from tests.fuzz_mutations import check, mutate

SHARED = ROOT.parent / "shared" / "traces"
KINDS = ["truncate", "flip", "insert", "delete", "duplicate"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--max-mb", type=float, default=2, help="seed traces up to this size (JSON MB)")
    ap.add_argument("--keep", default="fuzz-failures")
    ap.add_argument("--classes", default="trace,sql,path,concurrency",
                    help="which attack classes, in turn (trace: mutated real traces)")
    a = ap.parse_args(argv)
    classes = [c.strip() for c in a.classes.split(",") if c.strip()]
    rng = random.Random(a.seed)
    seeds = []
    for p in sorted(SHARED.rglob("*.json*")):
        data = gzip.decompress(p.read_bytes()) if p.name.endswith(".gz") else p.read_bytes()
        if len(data) <= a.max_mb * 1e6:
            seeds.append((p.name, data))
    if not seeds and "trace" in classes:
        raise SystemExit(f"no seed traces under {SHARED}")
    counts = {"exact": 0, "error": 0}
    attacks: dict = {}
    end = time.monotonic() + a.minutes * 60
    work = pathlib.Path(tempfile.mkdtemp(prefix="tk-fuzz-"))
    failures = 0
    try:
        sql_run = None
        turn = 0
        while time.monotonic() < end:
            kind = classes[turn % len(classes)]
            turn += 1
            if kind != "trace":
                case = work / "case"
                case.mkdir(exist_ok=True)
                try:
                    if kind == "sql":
                        if sql_run is None:
                            (work / "sqlrun").mkdir(exist_ok=True)
                            sql_run = fuzz_attacks.make_run(work / "sqlrun")
                        outcome = fuzz_attacks.sql_case(rng, case, sql_run)
                    elif kind == "path":
                        outcome = fuzz_attacks.path_case(rng, case)
                    else:
                        outcome = fuzz_attacks.concurrency_case(rng, case)
                    attacks[(kind, outcome)] = attacks.get((kind, outcome), 0) + 1
                except Exception as exc:  # noqa: BLE001 - a broken rule, whatever its form, is the finding
                    failures += 1
                    print(f"FAIL {kind}: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
                shutil.rmtree(case, ignore_errors=True)
                continue
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
    print(f"{sum(counts.values()) + sum(attacks.values()) + failures} cases in {a.minutes} min: "
          f"traces {counts['exact']} exact, {counts['error']} clear errors; "
          + "; ".join(f"{k} {o}: {n}" for (k, o), n in sorted(attacks.items()))
          + f"; {failures} broke the rule")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
