"""Every function of tracekit's API stays callable after every module of the package is imported: a
module named like an API function (tracekit/diff.py beside tracekit.diff) would replace it."""

import importlib
import pkgutil

import tracekit


def test_no_module_shadows_an_api_function():
    for m in pkgutil.walk_packages(tracekit.__path__, "tracekit."):
        if m.name.endswith("_fastscan") or ".cli." in m.name and m.name.endswith("__main__"):
            continue
        importlib.import_module(m.name)
    for name in tracekit.__all__:
        if name in ("Run", "TracekitError", "__version__"):
            continue
        assert callable(getattr(tracekit, name)), f"tracekit.{name} is {getattr(tracekit, name)!r}"
