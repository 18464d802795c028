"""Weight files for the checkpoint-format transport: one ``.safetensors`` file (or a Hugging
Face checkpoint directory) with the model's own parameter names, validated against the served
model — names, shapes and dtypes — from the file's header, before a tensor is read, so a bad
file never touches the weights being served (Arctic-SWE §3.3)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

#: safetensors dtype names → torch dtypes (the floating and integer ones a policy uses).
_DTYPES: dict[str, torch.dtype] = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}


class WeightFileError(ValueError):
    """A weight file is unreadable or does not fit the served model (unknown or missing
    names, a wrong shape or dtype); nothing was loaded from it."""


Spec = dict[str, tuple[tuple[int, ...], torch.dtype]]


def weight_spec(model: torch.nn.Module) -> Spec:
    """What a weight file for ``model`` must hold: name → (shape, dtype), tied aliases
    (``lm_head.weight`` under tied embeddings) left out, as ``save_pretrained`` writes."""
    return _split_spec(model)[0]


def tied_spec(model: torch.nn.Module) -> Spec:
    """The tied aliases of ``model`` (``lm_head.weight`` under tied embeddings): a weight file
    may hold them (a plain ``state_dict()`` does); they are checked and then ignored, since the
    tied parameter loads from its owner (vLLM skips ``lm_head`` under tied embeddings too)."""
    return _split_spec(model)[1]


def _split_spec(model: torch.nn.Module) -> tuple[Spec, Spec]:
    owners: Spec = {}
    aliases: Spec = {}
    seen: set[int] = set()
    for name, tensor in model.state_dict(keep_vars=True).items():
        target = aliases if id(tensor) in seen else owners
        seen.add(id(tensor))
        target[name] = (tuple(tensor.shape), tensor.dtype)
    return owners, aliases


def load_weight_file(
    path: str | os.PathLike[str], spec: Spec, tied: Spec | None = None
) -> dict[str, torch.Tensor]:
    """Read the tensors of ``path`` (a ``.safetensors`` file or a directory of them) after
    checking them against ``spec`` (:func:`weight_spec`): the exact name set, each shape, each
    dtype. Names in ``tied`` (:func:`tied_spec`) may be present too: checked, not returned.
    Raises :class:`WeightFileError` naming the first few offenders."""
    tied = tied or {}
    files = _files(Path(path))
    header: dict[str, tuple[tuple[int, ...], str]] = {}
    try:
        for file in files:
            with safe_open(str(file), framework="pt") as handle:
                for name in handle.keys():  # noqa: SIM118  (safe_open is not a mapping)
                    piece = handle.get_slice(name)
                    header[name] = (tuple(piece.get_shape()), piece.get_dtype())
    except (OSError, SafetensorError) as exc:
        raise WeightFileError(f"cannot read {path}: {exc}") from exc
    _check(header, spec, tied)
    weights: dict[str, torch.Tensor] = {}
    try:
        for file in files:
            with safe_open(str(file), framework="pt") as handle:
                for name in handle.keys():  # noqa: SIM118  (safe_open is not a mapping)
                    if name not in tied:
                        weights[name] = handle.get_tensor(name)
    except (OSError, SafetensorError) as exc:
        raise WeightFileError(f"cannot read {path}: {exc}") from exc
    return weights


def save_weight_file(
    weights: Mapping[str, torch.Tensor] | torch.nn.Module, path: str | os.PathLike[str]
) -> Path:
    """Write a state dict (or a module's, tied aliases left out) as one ``.safetensors`` file,
    atomically (a sibling temporary file renamed into place), so an engine reading ``path``
    never sees half a file. Returns the path."""
    if isinstance(weights, torch.nn.Module):
        spec = weight_spec(weights)
        state = weights.state_dict()
        weights = {name: state[name] for name in spec}
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tensors: dict[str, torch.Tensor] = {}
    storages: set[int] = set()
    for name, tensor in weights.items():
        tensor = tensor.detach().to("cpu").contiguous()
        if tensor.untyped_storage().data_ptr() in storages:
            tensor = tensor.clone()  # safetensors refuses tensors that share memory
        storages.add(tensor.untyped_storage().data_ptr())
        tensors[name] = tensor
    handle, staging = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(handle)
    try:
        save_file(tensors, staging)
        os.replace(staging, target)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise
    return target


def _files(source: Path) -> list[Path]:
    if source.is_dir():
        files = sorted(source.glob("*.safetensors"))
        if not files:
            raise WeightFileError(f"{source} holds no *.safetensors file")
        return files
    if source.is_file():
        return [source]
    raise WeightFileError(f"weights not found: {source}")


def _check(header: Mapping[str, tuple[tuple[int, ...], str]], spec: Spec, tied: Spec) -> None:
    unknown = sorted(set(header) - set(spec) - set(tied))
    if unknown:
        raise WeightFileError(f"names not in the served model: {unknown[:5]}")
    missing = sorted(set(spec) - set(header))
    if missing:
        raise WeightFileError(f"names missing from the file: {missing[:5]}")
    for name, (shape, dtype_name) in header.items():
        want_shape, want_dtype = spec[name] if name in spec else tied[name]
        if shape != want_shape:
            raise WeightFileError(f"{name}: shape {shape} != served {want_shape}")
        dtype = _DTYPES.get(dtype_name)
        if dtype != want_dtype:
            raise WeightFileError(f"{name}: dtype {dtype_name} != served {want_dtype}")
