import pathlib

import pytest

HERE = pathlib.Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    """Every conformance test is slow: each ingests the real traces of ../shared/traces (or runs HTA on
    them). Developers skip them with -m 'not slow'; CI runs them."""
    for item in items:
        if HERE in pathlib.Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.slow)
