"""Public-API smoke test: the package imports and reports the version it was built with."""

from importlib.metadata import version

import swe_formatcheck


def test_version_matches_distribution_metadata() -> None:
    assert swe_formatcheck.__version__ == version("swe-formatcheck")


def test_all_names_resolve() -> None:
    for name in swe_formatcheck.__all__:
        assert hasattr(swe_formatcheck, name), name
