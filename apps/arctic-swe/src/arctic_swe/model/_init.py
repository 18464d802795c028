"""``arctic-swe model init``: write a self-contained local Qwen3.5 checkpoint directory.

The directory has the layout of a Hugging Face hub checkpoint (``config.json``,
``model.safetensors``, ``generation_config.json``, ``tokenizer.json``, ``tokenizer_config.json``
with the ``chat_template``), with seeded random weights of a preset, a byte-level BPE tokenizer
trained locally (Qwen3.5's special tokens, ``<|im_end|>`` as end of turn) and a chat template
in the Qwen3.5 format (or the app's own). Nothing is downloaded. ``load_policy``,
``load_tokenizer``, ``arctic-swe serve --model DIR``, the trainer and the cluster launcher all
take it as the policy.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from transformers import GenerationConfig

from arctic_swe._atomic import staged_dir
from arctic_swe.chat import (
    ENDOFTEXT,
    IM_END,
    TEMPLATES,
    checkpoint_corpus,
    save_tokenizer,
    special_id,
    train_tokenizer,
)
from arctic_swe.model._build import build_policy
from arctic_swe.model._checkpoint import _quiet_progress
from arctic_swe.model._config import TINY_PRESET, PolicyPreset, policy_config
from arctic_swe.model._errors import CheckpointError, PolicyConfigError
from arctic_swe.model._layout import check_checkpoint

#: Presets ``model init --preset`` knows, by name.
PRESETS: dict[str, PolicyPreset] = {"tiny": TINY_PRESET}
#: The tokenizer's vocabulary size (specials + bytes + merges learned from the corpus).
INIT_VOCAB_SIZE = 1024


def init_checkpoint(
    path: str | os.PathLike[str],
    *,
    preset: str = "tiny",
    seed: int = 0,
    template: str = "qwen3.5",
    vocab_size: int = INIT_VOCAB_SIZE,
    force: bool = False,
) -> Path:
    """Write a checkpoint directory at ``path`` and return it.

    Atomic: everything is written into a sibling staging directory that is renamed into place,
    so an interrupted run leaves no half checkpoint. An existing non-empty ``path`` is refused
    (:class:`CheckpointError`) unless ``force``, which replaces it. The same arguments give the
    same files' contents (weights, vocabulary, template).
    """
    if preset not in PRESETS:
        raise PolicyConfigError(f"unknown preset {preset!r}; known: {sorted(PRESETS)}")
    if template not in TEMPLATES:
        raise CheckpointError(f"unknown chat template {template!r}; known: {sorted(TEMPLATES)}")
    target = Path(path)
    if target.exists() and (not target.is_dir() or any(target.iterdir())) and not force:
        raise CheckpointError(f"{target} exists and is not empty (pass --force to replace it)")
    tokenizer = train_tokenizer(
        checkpoint_corpus(seed), vocab_size, chat_template=TEMPLATES[template]
    )
    end_id, pad_id = special_id(tokenizer, IM_END), special_id(tokenizer, ENDOFTEXT)
    config = policy_config(
        len(tokenizer), PRESETS[preset], pad_token_id=pad_id, eos_token_id=end_id
    )
    model = build_policy(config, seed, patch_numerics=False)
    generation: Any = GenerationConfig  # untyped constructor
    model.generation_config = generation(
        eos_token_id=[end_id, pad_id],
        pad_token_id=pad_id,
        do_sample=True,
        temperature=1.0,  # RL samples the policy as it is (Arctic-SWE §3.1)
        top_p=1.0,
        top_k=0,
    )
    with staged_dir(target.parent, target.name) as staging:
        with torch.no_grad(), _quiet_progress():
            model.save_pretrained(staging, safe_serialization=True)
        save_tokenizer(tokenizer, staging)
        check_checkpoint(staging)
    return target
