"""Tokenizer and chat template: byte-level BPE trained on the deck corpus with Qwen3.5's special
tokens, and a chat template in Qwen3.5's shape (ARCHITECTURE.md §4, embedded topology)."""

from arctic_swe.chat._errors import ChatError, TokenizerLoadError
from arctic_swe.chat._template import (
    CHAT_TEMPLATE,
    ENDOFTEXT,
    IM_END,
    IM_START,
    SPECIAL_TOKENS,
    observation_block,
    observation_text,
    render_conversation,
    tool_schemas,
)
from arctic_swe.chat._tokenizer import (
    DEFAULT_VOCAB_SIZE,
    encode,
    load_tokenizer,
    save_tokenizer,
    special_id,
    train_tokenizer,
    wrap_tokenizer,
)

__all__ = [
    "CHAT_TEMPLATE",
    "DEFAULT_VOCAB_SIZE",
    "ENDOFTEXT",
    "IM_END",
    "IM_START",
    "SPECIAL_TOKENS",
    "ChatError",
    "TokenizerLoadError",
    "encode",
    "load_tokenizer",
    "observation_block",
    "observation_text",
    "render_conversation",
    "save_tokenizer",
    "special_id",
    "tool_schemas",
    "train_tokenizer",
    "wrap_tokenizer",
]
