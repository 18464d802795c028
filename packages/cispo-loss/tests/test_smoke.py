"""Public-API smoke test: the package imports and reports the version it was built with."""

from importlib.metadata import version

import cispo_loss


def test_version_matches_distribution_metadata() -> None:
    assert cispo_loss.__version__ == version("cispo-loss")


def test_all_names_resolve() -> None:
    for name in cispo_loss.__all__:
        assert hasattr(cispo_loss, name), name
