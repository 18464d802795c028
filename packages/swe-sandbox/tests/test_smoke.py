"""Public-API smoke test: the package imports and reports the version it was built with."""

from importlib.metadata import version

import swe_sandbox


def test_version_matches_distribution_metadata() -> None:
    assert swe_sandbox.__version__ == version("swe-sandbox")


def test_all_names_resolve() -> None:
    for name in swe_sandbox.__all__:
        assert hasattr(swe_sandbox, name), name
