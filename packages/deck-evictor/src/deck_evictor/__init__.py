"""Task decks with easy/hard eviction, replay probes for forgetting, curriculum filters and crash-safe state."""

from deck_evictor._version import __version__

__all__ = ["__version__"]
