"""The one validating reader of weights: a published version, a Hugging Face checkpoint
directory or a single ``.safetensors`` file. Everything is checked before a tensor is handed
out — the files exist and parse (a truncated file does not), a published version's manifest
matches its file (size, SHA-256, names, dtypes, shapes, version), and, when the caller gives
the served model's :data:`Spec`, the exact name set, shapes and dtypes — so a bad file never
touches the weights being served (Arctic-SWE §3.3)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open

from arctic_swe.weights._format import (
    FORMAT,
    MANIFEST_FILE,
    Manifest,
    TensorEntry,
    file_digest,
)
from arctic_swe.weights._header import DTYPES, Header, WeightsError, header_of
from arctic_swe.weights._tied import Spec


def read_weights(
    source: str | os.PathLike[str],
    *,
    spec: Spec | None = None,
    tied: Spec | None = None,
    version: int | None = None,
) -> dict[str, torch.Tensor]:
    """The tensors of ``source`` on CPU, keyed by name, after every check (module docstring).

    ``spec`` (:func:`weight_spec`) is the served model's exact name set with shapes and
    dtypes; names in ``tied`` (:func:`tied_spec`) may be present too: checked, not returned.
    ``version``: a published version's manifest must name it. Raises :class:`WeightsError`
    naming the first few offenders."""
    path = Path(source)
    files = _files(path)
    header: Header = {}
    for file in files:
        header.update(header_of(file))
    manifest = read_manifest(path) if path.is_dir() else None
    if manifest is not None:
        _check_manifest(path, manifest, header, version)
    if spec is not None:
        check_spec(header, spec, tied or {})
    tied = tied or {}
    weights: dict[str, torch.Tensor] = {}
    try:
        for file in files:
            with safe_open(str(file), framework="pt") as handle:
                for name in handle.keys():  # noqa: SIM118  (safe_open is not a mapping)
                    if name not in tied:
                        weights[name] = handle.get_tensor(name)
    except (OSError, SafetensorError) as exc:
        raise WeightsError(f"cannot read {path}: {exc}") from exc
    return weights


def read_manifest(directory: Path) -> Manifest | None:
    """The manifest of a published version, or ``None`` when the directory has none."""
    path = directory / MANIFEST_FILE
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text())
        if raw.get("format") != FORMAT:
            raise WeightsError(f"{path} is not an {FORMAT} manifest")
        return Manifest(
            version=int(raw["version"]),
            file=str(raw["file"]),
            bytes=int(raw["bytes"]),
            sha256=str(raw["sha256"]),
            tensors={
                str(name): TensorEntry(str(entry["dtype"]), tuple(int(d) for d in entry["shape"]))
                for name, entry in raw["tensors"].items()
            },
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        if isinstance(exc, WeightsError):
            raise
        raise WeightsError(f"cannot read {path}: {exc}") from exc


def check_spec(header: Mapping[str, tuple[tuple[int, ...], str]], spec: Spec, tied: Spec) -> None:
    """The exact name set of ``spec`` (``tied`` names allowed), each shape and dtype."""
    unknown = sorted(set(header) - set(spec) - set(tied))
    if unknown:
        raise WeightsError(f"names not in the served model: {unknown[:5]}")
    missing = sorted(set(spec) - set(header))
    if missing:
        raise WeightsError(f"names missing from the file: {missing[:5]}")
    for name, (shape, dtype_name) in header.items():
        want_shape, want_dtype = spec[name] if name in spec else tied[name]
        if shape != want_shape:
            raise WeightsError(f"{name}: shape {shape} != served {want_shape}")
        if DTYPES.get(dtype_name) != want_dtype:
            raise WeightsError(f"{name}: dtype {dtype_name} != served {want_dtype}")


def _check_manifest(
    directory: Path, manifest: Manifest, header: Header, version: int | None
) -> None:
    if version is not None and manifest.version != version:
        raise WeightsError(f"{directory} holds version {manifest.version}, not {version}")
    file = directory / manifest.file
    if not file.is_file():
        raise WeightsError(f"{file} named by the manifest is missing")
    if file.stat().st_size != manifest.bytes:
        raise WeightsError(
            f"{file}: {file.stat().st_size} bytes, the manifest says {manifest.bytes}"
        )
    listed = {name: (entry.shape, entry.dtype) for name, entry in manifest.tensors.items()}
    if listed != header:
        differ = sorted(set(listed) ^ set(header)) or sorted(
            n for n in listed if listed[n] != header[n]
        )
        raise WeightsError(f"{directory}: the files do not match the manifest: {differ[:5]}")
    if file_digest(file) != manifest.sha256:
        raise WeightsError(f"{file}: SHA-256 differs from the manifest (corrupt file)")


def _files(source: Path) -> list[Path]:
    if source.is_dir():
        files = sorted(source.glob("*.safetensors"))
        if not files:
            raise WeightsError(f"{source} holds no *.safetensors file")
        return files
    if source.is_file():
        return [source]
    raise WeightsError(f"weights not found: {source}")
