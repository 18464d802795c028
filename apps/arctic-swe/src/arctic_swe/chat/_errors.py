"""Typed errors of the tokenizer and chat template."""

from __future__ import annotations


class ChatError(ValueError):
    """Base class: a tokenizer could not be trained or loaded, or a conversation rendered."""


class TokenizerLoadError(ChatError):
    """A tokenizer directory is missing, unreadable or lacks the Qwen3.5 special tokens."""
