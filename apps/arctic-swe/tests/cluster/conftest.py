"""A real tiny checkpoint directory (Qwen3.5 config, safetensors, tokenizer with the chat
template, from ``arctic-swe model init``) and topology files written next to it."""

from __future__ import annotations

from pathlib import Path

import pytest

from arctic_swe.model import init_checkpoint


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What ``arctic-swe model init`` writes (the tiny preset, the Qwen3.5 chat template)."""
    return init_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny")


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
