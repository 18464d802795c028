"""A byte-level BPE tokenizer trained locally on the deck corpus (ARCHITECTURE.md §4, embedded).

Nothing is downloaded: the vocabulary is learned with the ``tokenizers`` library from the text
the policy will read and write (repositories, issues, system prompt, rendered tool calls), the
Qwen3.5 special tokens are added whole, and the result is a ``PreTrainedTokenizerFast`` with the
chat template attached, saved and loaded like any Hugging Face tokenizer directory.

Byte-level BPE decodes any id sequence to bytes exactly, so ``decode(encode(text)) == text``
for every string (tested with hypothesis).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from arctic_swe.chat._errors import ChatError, TokenizerLoadError
from arctic_swe.chat._template import CHAT_TEMPLATE, ENDOFTEXT, IM_END, SPECIAL_TOKENS

DEFAULT_VOCAB_SIZE = 2048
#: The special tokens a loaded tokenizer must have: the turn markers and the reasoning, call and
#: tool-result tags the harness and swe-formatcheck rely on (the vision / FIM / repository
#: tokens of :data:`SPECIAL_TOKENS` are trained in but not required of other checkpoints).
REQUIRED_TOKENS: tuple[str, ...] = SPECIAL_TOKENS[:9]


def train_tokenizer(
    corpus: Iterable[str],
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    *,
    chat_template: str = CHAT_TEMPLATE,
) -> PreTrainedTokenizerFast:
    """Train byte-level BPE on ``corpus`` and wrap it with the special tokens and template.

    Special tokens occupy the first ids (``<|endoftext|>`` = 0, ``<|im_start|>`` = 1,
    ``<|im_end|>`` = 2, …); ``eos`` is ``<|im_end|>`` (the end of an assistant turn), ``pad``
    is ``<|endoftext|>``. Deterministic for a given corpus order. ``chat_template`` is the
    Jinja template attached (the app's own by default; :data:`TEMPLATES` names the others).
    """
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise ChatError(f"vocab_size must be an int, got {vocab_size!r}")
    floor = len(SPECIAL_TOKENS) + 256
    if vocab_size < floor:
        raise ChatError(f"vocab_size must be >= {floor} (specials + 256 bytes), got {vocab_size}")
    model = Tokenizer(models.BPE())
    model.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    model.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    model.train_from_iterator(corpus, trainer=trainer)
    return wrap_tokenizer(model, chat_template=chat_template)


def wrap_tokenizer(
    model: Tokenizer, *, chat_template: str = CHAT_TEMPLATE
) -> PreTrainedTokenizerFast:
    """A ``PreTrainedTokenizerFast`` over ``model`` with Qwen's roles and ``chat_template``."""
    factory: Any = PreTrainedTokenizerFast  # transformers' constructor is untyped
    tokenizer: PreTrainedTokenizerFast = factory(
        tokenizer_object=model,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        additional_special_tokens=[t for t in SPECIAL_TOKENS if t not in (IM_END, ENDOFTEXT)],
        clean_up_tokenization_spaces=False,
        model_max_length=131072,
    )
    tokenizer.chat_template = chat_template
    return tokenizer


def save_tokenizer(tokenizer: PreTrainedTokenizerFast, path: str | os.PathLike[str]) -> Path:
    """``save_pretrained`` into ``path`` (created); returns the path. The chat template is
    stored in ``tokenizer_config.json`` (``chat_template``), where every loader finds it."""
    target = Path(path)
    target.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(target), save_jinja_files=False)
    return target


def load_tokenizer(path: str | os.PathLike[str]) -> PreTrainedTokenizerFast:
    """Load a tokenizer directory written by :func:`save_tokenizer` (or any HF fast tokenizer
    directory carrying Qwen's :data:`REQUIRED_TOKENS`); :class:`TokenizerLoadError` otherwise."""
    directory = Path(path)
    if not (directory / "tokenizer.json").is_file():
        raise TokenizerLoadError(f"no tokenizer.json in {directory}")
    try:
        loader: Any = PreTrainedTokenizerFast.from_pretrained
        tokenizer: PreTrainedTokenizerFast = loader(str(directory), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise TokenizerLoadError(f"cannot load the tokenizer in {directory}: {exc}") from exc
    vocab = tokenizer.get_vocab()
    missing = [token for token in REQUIRED_TOKENS if token not in vocab]
    if missing:
        raise TokenizerLoadError(f"{directory} lacks special tokens {missing}")
    return tokenizer


def special_id(tokenizer: PreTrainedTokenizerFast, token: str) -> int:
    """The id of a special token (:class:`ChatError` when absent)."""
    found = tokenizer.get_vocab().get(token)
    if found is None:
        raise ChatError(f"{token!r} is not in the vocabulary")
    return int(found)


def encode(tokenizer: PreTrainedTokenizerFast, text: str) -> list[int]:
    """Token ids of ``text`` with special tokens recognised and nothing added around them."""
    ids: list[int] = tokenizer.encode(text, add_special_tokens=False)
    return ids
