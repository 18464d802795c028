"""Tests for ``arctic_swe.chat._tokenizer``: training, special tokens, round trips, save/load."""

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from transformers import PreTrainedTokenizerFast

from arctic_swe.chat import (
    IM_END,
    REQUIRED_TOKENS,
    SPECIAL_TOKENS,
    ChatError,
    TokenizerLoadError,
    encode,
    load_tokenizer,
    save_tokenizer,
    special_id,
    train_tokenizer,
)

CORPUS = [
    "def add_total(a, b):\n    return a + b\n",
    "`add_total` in `ledger/core.py` returns the wrong value.\n",
    "<think>\nRun the tests.\n</think>\n\n<tool_call>\n<function=execute_bash>\n"
    "<parameter=command>\npython3 -m pytest -q\n</parameter>\n</function>\n</tool_call>",
] * 20


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    return train_tokenizer(CORPUS, vocab_size=400)


def test_special_tokens_come_first_and_encode_whole(tokenizer: PreTrainedTokenizerFast) -> None:
    for index, token in enumerate(SPECIAL_TOKENS):
        assert special_id(tokenizer, token) == index
        ids = encode(tokenizer, f"x{token}y")
        assert ids.count(index) == 1
        assert tokenizer.decode(ids, skip_special_tokens=False) == f"x{token}y"
    assert tokenizer.eos_token == IM_END
    assert tokenizer.pad_token == "<|endoftext|>"


def test_training_learns_merges_from_the_corpus(tokenizer: PreTrainedTokenizerFast) -> None:
    text = "    return a + b\n"
    assert len(encode(tokenizer, text)) < len(text.encode()) / 2


@given(st.text(max_size=200))
def test_decode_inverts_encode_on_any_text(text: str) -> None:
    tok = _shared()
    assert tok.decode(encode(tok, text), skip_special_tokens=False) == text


_CACHE: list[PreTrainedTokenizerFast] = []


def _shared() -> PreTrainedTokenizerFast:
    if not _CACHE:
        _CACHE.append(train_tokenizer(CORPUS, vocab_size=400))
    return _CACHE[0]


def test_training_is_deterministic() -> None:
    first = train_tokenizer(CORPUS, vocab_size=400)
    second = train_tokenizer(CORPUS, vocab_size=400)
    assert first.get_vocab() == second.get_vocab()


def test_save_and_load_like_any_hf_tokenizer(
    tokenizer: PreTrainedTokenizerFast, tmp_path: Path
) -> None:
    save_tokenizer(tokenizer, tmp_path / "tok")
    loaded = load_tokenizer(tmp_path / "tok")
    text = CORPUS[2] + IM_END + "\nfree text"
    assert encode(loaded, text) == encode(tokenizer, text)
    assert loaded.chat_template == tokenizer.chat_template
    from_hf = PreTrainedTokenizerFast.from_pretrained(str(tmp_path / "tok"))
    assert from_hf.encode(text, add_special_tokens=False) == encode(tokenizer, text)


def test_bad_vocab_size_and_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(ChatError, match="vocab_size"):
        train_tokenizer(CORPUS, vocab_size=100)
    with pytest.raises(ChatError, match="int"):
        train_tokenizer(CORPUS, vocab_size=True)
    with pytest.raises(TokenizerLoadError, match=r"no tokenizer\.json"):
        load_tokenizer(tmp_path)


def test_a_tokenizer_without_the_special_tokens_is_refused(
    tokenizer: PreTrainedTokenizerFast, tmp_path: Path
) -> None:
    save_tokenizer(tokenizer, tmp_path)
    data = json.loads((tmp_path / "tokenizer.json").read_text())
    data["added_tokens"] = [t for t in data["added_tokens"] if t["content"] != "<think>"]
    del data["model"]["vocab"]["<think>"]
    (tmp_path / "tokenizer.json").write_text(json.dumps(data))
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        path = tmp_path / name
        if path.exists():
            path.write_text(path.read_text().replace('"<think>",', ""))
    with pytest.raises(TokenizerLoadError, match="special tokens"):
        load_tokenizer(tmp_path)
    with pytest.raises(ChatError, match="not in the vocabulary"):
        special_id(tokenizer, "<nope>")


def test_only_the_required_special_tokens_are_required(
    tokenizer: PreTrainedTokenizerFast, tmp_path: Path
) -> None:
    """A checkpoint without the vision/FIM tokens (not used by the harness) still loads."""
    save_tokenizer(tokenizer, tmp_path)
    data = json.loads((tmp_path / "tokenizer.json").read_text())
    data["added_tokens"] = [t for t in data["added_tokens"] if t["content"] != "<|vision_pad|>"]
    del data["model"]["vocab"]["<|vision_pad|>"]
    (tmp_path / "tokenizer.json").write_text(json.dumps(data))
    config = tmp_path / "tokenizer_config.json"
    config.write_text(config.read_text().replace('"<|vision_pad|>",', ""))
    loaded = load_tokenizer(tmp_path)
    assert "<|vision_pad|>" not in loaded.get_vocab()
    assert set(REQUIRED_TOKENS) <= set(loaded.get_vocab())
