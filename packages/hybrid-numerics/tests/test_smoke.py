"""Public-API smoke test: the package imports and reports the version it was built with."""

from importlib.metadata import version

import hybrid_numerics


def test_version_matches_distribution_metadata() -> None:
    assert hybrid_numerics.__version__ == version("hybrid-numerics")


def test_all_names_resolve() -> None:
    for name in hybrid_numerics.__all__:
        assert hasattr(hybrid_numerics, name), name
