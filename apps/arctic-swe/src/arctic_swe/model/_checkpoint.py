"""Local Hugging Face checkpoints: save, load, and read weights for an engine refresh.

Nothing is downloaded: every path is a local directory (``config.json`` + ``*.safetensors``)
as written by ``save_pretrained``; the same code loads any Qwen3.5 text checkpoint.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig
from transformers.utils import logging as hf_logging

from arctic_swe._atomic import staged_dir
from arctic_swe.model._build import install_numerics
from arctic_swe.model._errors import CheckpointError
from arctic_swe.model._layout import text_config_dict
from arctic_swe.weights import WeightsError, tied_aliases
from arctic_swe.weights import read_weights as validated_read


@contextmanager
def _quiet_progress() -> Iterator[None]:
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


def save_policy(model: Qwen3_5ForCausalLM, path: str | os.PathLike[str]) -> Path:
    """Write ``model`` as a Hugging Face checkpoint directory (``config.json`` +
    ``model.safetensors``) at ``path``; returns the path.

    Atomic: the checkpoint is written to a sibling temporary directory and renamed into place,
    so a crash never leaves a half-written checkpoint where a loader (or an engine refresh)
    would read it. An existing directory at ``path`` is replaced.
    """
    target = Path(path)
    with staged_dir(target.parent, target.name) as staging, _quiet_progress():
        # quiet: a checkpoint per update, no tqdm line each time
        model.save_pretrained(staging, safe_serialization=True)
    return target


def load_policy(
    path: str | os.PathLike[str],
    *,
    device: str | torch.device = "cpu",
    compute_dtype: torch.dtype = torch.float32,
    patch_numerics: bool = True,
) -> Qwen3_5ForCausalLM:
    """Load a Qwen3.5 text checkpoint from a local directory as an eval-mode policy, read in
    FP32 and then put under hybrid-numerics' precision policy with ``compute_dtype`` (FP32
    throughout by default) and its kernels patched in, unless ``patch_numerics=False``.

    Either layout loads: a text model (``model_type`` ``qwen3_5_text``, as ``save_policy`` and
    ``arctic-swe model init`` write) or a full Qwen3.5 checkpoint (``qwen3_5``, the hub's
    vision-language layout: its ``text_config`` and ``model.language_model.*`` weights are
    taken, the vision tower and MTP head are left out).

    Raises :class:`CheckpointError` when the directory, its ``config.json`` or its weights are
    missing or are not a Qwen3.5 model.
    """
    directory = _checkpoint_dir(path)
    config, composite = _read_config(directory)
    if composite:
        model = _load_composite(directory, config)
    else:
        try:
            loader: Any = Qwen3_5ForCausalLM.from_pretrained  # opaque to mypy (decorated)
            with _quiet_progress():  # no "Loading weights" bar per load (evaluate loads several)
                model = loader(directory, config=config, dtype=torch.float32, local_files_only=True)
        except (OSError, ValueError, RuntimeError, SafetensorError) as exc:
            raise CheckpointError(f"cannot load weights from {directory}: {exc}") from exc
    torch.nn.Module.to(model, device=device)  # HF's .to() is untyped
    own_aligned_storage(model)
    torch.nn.Module.eval(model)
    if patch_numerics:
        install_numerics(model, compute_dtype=compute_dtype)
    return model


#: The CPU allocator's alignment. A tensor whose data starts off it (a view into the bytes of a
#: loaded safetensors file) takes other SIMD code paths in the BLAS kernels, so its matmuls
#: round differently from those of an aligned copy of the same values.
ALIGNMENT = 64


def own_aligned_storage(model: torch.nn.Module) -> int:
    """Give every parameter and buffer of ``model`` whose data is not ``ALIGNMENT``-byte
    aligned a fresh (aligned) copy of its values, in place; returns how many were moved.

    Why: ``from_pretrained`` leaves most tensors as views into the checkpoint's bytes, off the
    64-byte boundary, while the engines are deep copies with aligned storage. Identical
    weights then round differently (measured: a lag-0 mismatch KL of 6.2e-15 on the loaded
    trainer model vs 5.5e-15 on its copy), so the trainer-vs-engine mismatch the run logs
    (Arctic-SWE §3.3) would include an artefact of memory layout. Tied weights stay tied (one
    ``Parameter`` object, moved once)."""
    moved = 0
    with torch.no_grad():
        for parameter in model.parameters():  # deduplicated: a tied weight is seen once
            if parameter.data_ptr() % ALIGNMENT:
                parameter.data = parameter.data.clone()
                moved += 1
        copies: dict[int, torch.Tensor] = {}  # a buffer shared by modules stays shared
        for module in model.modules():
            for name, buffer in module.named_buffers(recurse=False):
                if buffer.data_ptr() % ALIGNMENT:
                    if id(buffer) not in copies:
                        copies[id(buffer)] = buffer.clone()
                        moved += 1
                    module._buffers[name] = copies[id(buffer)]
    return moved


_COMPOSITE_PREFIX = "model.language_model."


def _load_composite(directory: Path, config: Qwen3_5TextConfig) -> Qwen3_5ForCausalLM:
    """The language model of a full Qwen3.5 checkpoint, weights renamed to the text layout."""
    stored = read_weights(directory)
    weights = {
        "model." + name.removeprefix(_COMPOSITE_PREFIX): tensor
        for name, tensor in stored.items()
        if name.startswith(_COMPOSITE_PREFIX)
    }
    if weights and "lm_head.weight" in stored:  # absent when tied to the embeddings
        weights["lm_head.weight"] = stored["lm_head.weight"]
    if not weights:
        raise CheckpointError(f"{directory} holds no {_COMPOSITE_PREFIX}* weights")
    factory: Any = Qwen3_5ForCausalLM
    model: Qwen3_5ForCausalLM = factory(config)
    torch.nn.Module.to(model, dtype=torch.float32)
    assign_weights(model, weights)
    return model


def read_weights(path: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """All tensors of a checkpoint directory (every ``*.safetensors`` shard), a published
    version or a single ``.safetensors`` file, on CPU, keyed by parameter name, read by
    :func:`arctic_swe.weights.read_weights` (validated); its refusal as a
    :class:`CheckpointError`."""
    try:
        return validated_read(path)
    except WeightsError as exc:
        raise CheckpointError(str(exc)) from exc


@torch.no_grad()
def assign_weights(model: torch.nn.Module, weights: Mapping[str, torch.Tensor]) -> None:
    """Copy ``weights`` into ``model``'s parameters and buffers in place, each keeping its own
    dtype (so FP32 master parameters stay FP32 under a precision policy).

    Every name and shape is checked **before** anything is written: on a
    :class:`CheckpointError` the model still holds its previous weights. Tied parameters may
    be absent (``lm_head.weight`` when embeddings are tied).
    """
    targets = model.state_dict(keep_vars=True)  # tied aliases included
    persistent = set(targets)
    unknown = sorted(set(weights) - persistent)
    if unknown:
        raise CheckpointError(f"weights not in the model: {unknown[:5]}")
    tied = tied_aliases(model)
    missing = sorted(persistent - set(weights) - tied)
    if missing:
        raise CheckpointError(f"weights missing for: {missing[:5]}")
    for name, tensor in weights.items():
        if tuple(tensor.shape) != tuple(targets[name].shape):
            raise CheckpointError(
                f"{name}: shape {tuple(tensor.shape)} != model {tuple(targets[name].shape)}"
            )
        if not tensor.is_floating_point() and targets[name].is_floating_point():
            raise CheckpointError(f"{name}: dtype {tensor.dtype} is not floating point")
    for name, tensor in weights.items():
        targets[name].copy_(tensor)


def _checkpoint_dir(path: str | os.PathLike[str]) -> Path:
    directory = Path(path)
    if not directory.is_dir():
        raise CheckpointError(f"checkpoint directory not found: {directory}")
    if not (directory / "config.json").is_file():
        raise CheckpointError(f"{directory} has no config.json")
    return directory


def _read_config(directory: Path) -> tuple[Qwen3_5TextConfig, bool]:
    raw, composite = text_config_dict(directory)
    try:
        return Qwen3_5TextConfig.from_dict(raw), composite
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"invalid config in {directory}: {exc}") from exc
