"""Public-API smoke test: the package imports and reports the version it was built with."""

from importlib.metadata import version

import deck_evictor


def test_version_matches_distribution_metadata() -> None:
    assert deck_evictor.__version__ == version("deck-evictor")


def test_all_names_resolve() -> None:
    for name in deck_evictor.__all__:
        assert hasattr(deck_evictor, name), name
