"""Public-API smoke test: the package imports and reports the version it was built with."""

from importlib.metadata import version

import swe_curate


def test_version_matches_distribution_metadata() -> None:
    assert swe_curate.__version__ == version("swe-curate")


def test_all_names_resolve() -> None:
    for name in swe_curate.__all__:
        assert hasattr(swe_curate, name), name
