"""Typed errors of the tokenizer and chat template."""

from __future__ import annotations


class ChatError(ValueError):
    """Base class: a tokenizer could not be trained or loaded, or a conversation rendered."""


class TokenizerLoadError(ChatError):
    """A tokenizer directory is missing, unreadable or lacks the Qwen3.5 special tokens."""


class TemplateError(ChatError):
    """A chat template is missing, fails to render, or has a shape the harness cannot append
    observations to as tokens (or its tool-call format is not one swe-formatcheck checks)."""
