"""Defaults of a run's inputs, shared by the commands that build them and the loop that reuses
them: where a deck keeps its tokenizer, and the warm start's budget (``arctic-swe warmstart``
and the warm start ``overfit`` runs itself must not drift apart)."""

from __future__ import annotations

#: Where ``deck build`` saves the tokenizer, inside the deck directory.
TOKENIZER_DIR = "tokenizer"

#: The warm start's defaults (``arctic-swe warmstart`` and the one ``overfit`` runs itself).
WARMSTART_TASKS = 200
WARMSTART_STEPS = 300
WARMSTART_WORKERS = 2
