"""The compiled fast path of ingest (tracekit/ingestion/_fastscan.c) is optional: where no C compiler is
found the build goes on without it, and tracekit decodes every event in Python (same results, slower)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("tracekit.ingestion._fastscan", ["tracekit/ingestion/_fastscan.c"],
                             extra_compile_args=["-O3"], optional=True),
                   # the replay's loop (tracekit/graph/engine.py runs it in Python where this is not built)
                   Extension("tracekit.graph._replay", ["tracekit/graph/_replay.c"],
                             extra_compile_args=["-O3"], optional=True)])
