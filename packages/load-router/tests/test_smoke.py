"""Public-API smoke test: the package imports and reports the version it was built with."""

from importlib.metadata import version

import load_router


def test_version_matches_distribution_metadata() -> None:
    assert load_router.__version__ == version("load-router")


def test_all_names_resolve() -> None:
    for name in load_router.__all__:
        assert hasattr(load_router, name), name
