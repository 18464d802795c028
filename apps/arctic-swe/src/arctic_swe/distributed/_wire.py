"""The orchestrator -> trainer batch encoding (the body of ``POST /step``) and its replies.

One JSON object::

    {"samples": [
        {"token_ids": [int, ...],          # the whole rollout, prompt + turns + observations
         "loss_mask": [bool, ...],         # True on tokens the policy generated
         "rollout_logprobs": [float, ...], # log pi_rollout of each generated token (<= 0)
         "versions": [int, ...],           # policy version that sampled each token (-1: none)
         "advantage": float},              # group-centred advantage of the rollout
        ...],
     "version": int}                       # the policy version this step will produce

All four per-token arrays have the same length. JSON numbers carry Python floats exactly
(shortest round-trip repr), so the trainer sees bit-identical log-probs and advantages; NaN and
infinities are not JSON and are refused. Everything is validated on rank 0 *before* any
collective starts, so a bad batch is a 400 and never wedges the ranks.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arctic_swe.trainer import BatchError, TrainSample


@dataclass(frozen=True)
class WireBatch:
    """A decoded ``/step`` body: the samples and the per-token versions that came with them."""

    samples: tuple[TrainSample, ...]
    versions: tuple[tuple[int, ...], ...]
    version: int | None

    @property
    def oldest_version(self) -> int:
        """The oldest policy version of any generated token (-1 when none is recorded)."""
        seen = [v for row in self.versions for v in row if v >= 0]
        return min(seen) if seen else -1


def encode_batch(
    samples: Sequence[TrainSample],
    versions: Sequence[Sequence[int]] | None = None,
    *,
    version: int | None = None,
) -> dict[str, Any]:
    """The ``/step`` body for ``samples`` (``versions`` default to -1 everywhere)."""
    if versions is not None and len(versions) != len(samples):
        raise BatchError(f"{len(versions)} version rows for {len(samples)} samples")
    rows = []
    for index, sample in enumerate(samples):
        row = versions[index] if versions is not None else [-1] * len(sample.token_ids)
        rows.append(
            {
                "token_ids": list(sample.token_ids),
                "loss_mask": [bool(m) for m in sample.loss_mask],
                "rollout_logprobs": [float(x) for x in sample.rollout_logprobs],
                "versions": [int(v) for v in row],
                "advantage": float(sample.advantage),
            }
        )
    body: dict[str, Any] = {"samples": rows}
    if version is not None:
        body["version"] = version
    return body


def decode_batch(body: Any, vocab_size: int) -> WireBatch:
    """Validate and decode a ``/step`` body; :class:`BatchError` names what is wrong."""
    if not isinstance(body, dict):
        raise BatchError("the body must be a JSON object")
    raw = body.get("samples")
    if not isinstance(raw, list) or not raw:
        raise BatchError('"samples" must be a non-empty list')
    version = body.get("version")
    if version is not None and (not _is_int(version) or version < 0):
        raise BatchError('"version" must be an integer >= 0')
    samples, versions = [], []
    for index, item in enumerate(raw):
        try:
            sample, row = _decode_sample(item, vocab_size)
        except BatchError as exc:
            raise BatchError(f"sample {index}: {exc}") from None
        samples.append(sample)
        versions.append(row)
    return WireBatch(tuple(samples), tuple(versions), version)


def batch_digest(samples: Sequence[TrainSample], versions: Sequence[Sequence[int]]) -> str:
    """SHA-256 of the exact values of a batch (float64 bit patterns, not their text): rank 0
    answers it, so a client can check the trainer received precisely what it sent."""
    digest = hashlib.sha256()
    for sample, row in zip(samples, versions, strict=True):
        header = [list(sample.token_ids), [int(m) for m in sample.loss_mask], list(row)]
        digest.update(json.dumps(header).encode())
        digest.update(struct.pack(f"<{len(sample.rollout_logprobs)}d", *sample.rollout_logprobs))
        digest.update(struct.pack("<d", sample.advantage))
    return digest.hexdigest()


def _decode_sample(item: Any, vocab_size: int) -> tuple[TrainSample, tuple[int, ...]]:
    if not isinstance(item, dict):
        raise BatchError("must be a JSON object")
    missing = {"token_ids", "loss_mask", "rollout_logprobs", "advantage"} - item.keys()
    if missing:
        raise BatchError(f"missing {sorted(missing)}")
    ids, mask, logprobs = item["token_ids"], item["loss_mask"], item["rollout_logprobs"]
    if not isinstance(ids, list) or not all(_is_int(t) for t in ids):
        raise BatchError("token_ids must be a list of integers")
    if any(t < 0 or t >= vocab_size for t in ids):
        raise BatchError(f"token ids must lie in [0, {vocab_size})")
    if not isinstance(mask, list) or not all(isinstance(m, bool) for m in mask):
        raise BatchError("loss_mask must be a list of booleans")
    if not isinstance(logprobs, list) or not all(_is_number(x) for x in logprobs):
        raise BatchError("rollout_logprobs must be a list of finite numbers")
    advantage = item["advantage"]
    if not _is_number(advantage):
        raise BatchError("advantage must be a finite number")
    row = item.get("versions", [-1] * len(ids))
    if not isinstance(row, list) or not all(_is_int(v) for v in row) or len(row) != len(ids):
        raise BatchError("versions must be a list of integers, one per token")
    sample = TrainSample(
        token_ids=tuple(ids),
        loss_mask=tuple(mask),
        rollout_logprobs=tuple(float(x) for x in logprobs),
        advantage=float(advantage),
    )  # TrainSample checks lengths, the first token and the log-prob signs
    return sample, tuple(row)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)
