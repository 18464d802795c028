"""Typed errors of the embedded deck."""

from __future__ import annotations


class StoredDeckError(ValueError):
    """Base class: a deck could not be generated, written, loaded or validated."""


class DeckConfigError(StoredDeckError):
    """A deck config field is out of range (sizes, seed, module counts)."""


class DeckFormatError(StoredDeckError):
    """A deck directory is missing, incomplete or its manifest is not one this version wrote."""
