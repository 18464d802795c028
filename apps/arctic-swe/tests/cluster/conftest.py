"""A real tiny checkpoint directory (Qwen3.5 config, safetensors, tokenizer with the chat
template) and topology files written next to it."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers import PreTrainedTokenizerFast

from arctic_swe.chat import save_tokenizer
from arctic_swe.model import build_policy, policy_config, save_policy


@pytest.fixture(scope="session")
def checkpoint(
    tmp_path_factory: pytest.TempPathFactory, deck_tokenizer: PreTrainedTokenizerFast
) -> Path:
    root = tmp_path_factory.mktemp("ckpt") / "tiny"
    save_policy(build_policy(policy_config(len(deck_tokenizer)), 0), root)
    save_tokenizer(deck_tokenizer, root)
    return root


def write_topology(folder: Path, model: Path | str, **sections: str) -> Path:
    """A small CPU topology; ``sections`` replace whole sections by TOML text."""
    parts = {
        "model": f'path = "{model}"',
        "engines": "count = 2\ncapacity = 4",
        "trainer": "ranks = 0",
        "sandbox": "capacity = 2",
        "deck": "pool_size = 2\ngroups_per_update = 1\nrollouts_per_group = 2",
        "engine": "max_resident = 4",
    }
    parts.update(sections)
    path = folder / "topology.toml"
    path.write_text("".join(f"[{name}]\n{body}\n\n" for name, body in parts.items()))
    return path
