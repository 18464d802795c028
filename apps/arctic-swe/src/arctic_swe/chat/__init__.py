"""Tokenizer and chat template: byte-level BPE trained on the deck corpus with Qwen3.5's special
tokens, the app's chat template and a Qwen3.5-format one (ARCHITECTURE.md §4, embedded topology),
and :class:`ChatFormat`, which renders prompts and observation deltas with a checkpoint's own
template."""

from arctic_swe.chat._corpus import TEMPLATES, checkpoint_corpus
from arctic_swe.chat._errors import ChatError, TemplateError, TokenizerLoadError
from arctic_swe.chat._format import (
    ChatFormat,
    chat_format,
    detect_dialect,
    render_template,
)
from arctic_swe.chat._qwen35 import QWEN35_CHAT_TEMPLATE
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
    REQUIRED_TOKENS,
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
    "QWEN35_CHAT_TEMPLATE",
    "REQUIRED_TOKENS",
    "SPECIAL_TOKENS",
    "TEMPLATES",
    "ChatError",
    "ChatFormat",
    "TemplateError",
    "TokenizerLoadError",
    "chat_format",
    "checkpoint_corpus",
    "detect_dialect",
    "encode",
    "load_tokenizer",
    "observation_block",
    "observation_text",
    "render_conversation",
    "render_template",
    "save_tokenizer",
    "special_id",
    "tool_schemas",
    "train_tokenizer",
    "wrap_tokenizer",
]
