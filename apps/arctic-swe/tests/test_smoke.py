"""Public-API smoke test: the package imports and reports the version it was built with."""

from importlib.metadata import version

import arctic_swe


def test_version_matches_distribution_metadata() -> None:
    assert arctic_swe.__version__ == version("arctic-swe")


def test_all_names_resolve() -> None:
    for name in arctic_swe.__all__:
        assert hasattr(arctic_swe, name), name
