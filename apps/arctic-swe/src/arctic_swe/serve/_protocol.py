"""Request and response models of the engine protocol: the subset of vLLM 0.33's
OpenAI-compatible completions (token ids in; token ids, raw log-probs and weight-version spans
out) that an asynchronous RL loop needs (Arctic-SWE §3.3)."""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator

#: vLLM's finish reasons: "stop" (a stop token), "length" (max_tokens or the context), "abort".
FinishReasonName = Literal["stop", "length", "abort"]


class _Model(BaseModel):
    # Unknown fields are ignored, as vLLM's OpenAI models do (it only logs them), so a client
    # written for vLLM works unchanged.
    model_config = ConfigDict(extra="ignore")


class CompletionRequest(_Model):
    """``POST /v1/completions``. ``prompt`` is the whole history as token ids (a one-element
    batch ``[[...]]`` is accepted too); the engine samples at temperature 1 over the full
    vocabulary, so other sampling settings are refused rather than silently ignored."""

    model: str | None = None
    prompt: list[StrictInt] | list[list[StrictInt]]
    max_tokens: int = Field(default=16, ge=1)
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int | None = None
    min_p: float | None = None
    repetition_penalty: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    n: int = 1
    seed: int | None = Field(default=None, ge=0)
    logprobs: int | None = Field(default=None, ge=0)
    return_token_ids: bool = False
    return_weight_versions: bool = False
    skip_special_tokens: bool = True
    stop_token_ids: list[StrictInt] | None = None
    ignore_eos: bool = False
    stream: bool = False

    @field_validator("prompt")
    @classmethod
    def _one_prompt(cls, value: list[int] | list[list[int]]) -> list[int] | list[list[int]]:
        if value and isinstance(value[0], list):
            if len(value) != 1:
                raise ValueError("exactly one prompt per request (a batch of token-id lists)")
            value = value[0]
        if not value:
            raise ValueError("prompt must hold at least one token id")
        return value

    def prompt_ids(self) -> tuple[int, ...]:
        """The prompt as one flat tuple of token ids."""
        ids: Sequence[Any] = self.prompt[0] if isinstance(self.prompt[0], list) else self.prompt
        return tuple(int(t) for t in ids)

    def neutral_sampling(self) -> bool:
        """Whether the request asks for plain temperature-1 sampling (unset fields are
        neutral: this server has no other defaults, as ``vllm serve --generation-config
        vllm`` has none)."""
        return (
            self.temperature == 1.0
            and self.top_p == 1.0
            and self.top_k in (None, -1, 0)
            and self.min_p in (None, 0.0)
            and self.repetition_penalty in (None, 1.0)
            and self.presence_penalty in (None, 0.0)
            and self.frequency_penalty in (None, 0.0)
        )

    def unsupported(self) -> str | None:
        """Why this server cannot honour the request, or ``None``."""
        if self.stream:
            return "stream=true is not supported: the RL client reads whole completions"
        if self.n != 1:
            return f"n={self.n}: one completion per request (send one request per rollout)"
        if not self.neutral_sampling():
            return (
                "the engine samples raw log-probs at temperature 1 over the full vocabulary: "
                "temperature, top_p and repetition_penalty must be 1, top_k off (0 or -1), "
                "min_p and the presence/frequency penalties 0"
            )
        if self.logprobs not in (None, 0):
            return f"logprobs={self.logprobs}: only the sampled token's log-prob (logprobs=0)"
        return None


class WeightVersionSpan(_Model):
    """Output tokens ``[start, end)`` were sampled by the weights labelled ``version``."""

    version: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)


class CompletionLogProbs(_Model):
    """OpenAI legacy log-probs: one raw log-prob per sampled token."""

    text_offset: list[int] = Field(default_factory=list)
    token_logprobs: list[float | None] = Field(default_factory=list)
    tokens: list[str] = Field(default_factory=list)
    top_logprobs: list[dict[str, float] | None] = Field(default_factory=list)


class CompletionChoice(_Model):
    index: int = 0
    text: str = ""
    logprobs: CompletionLogProbs | None = None
    finish_reason: FinishReasonName | None = None
    stop_reason: int | str | None = None
    token_ids: list[int] | None = None
    weight_versions: list[WeightVersionSpan] | None = None


class UsageInfo(_Model):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class CompletionResponse(_Model):
    id: str = Field(default_factory=lambda: f"cmpl-{uuid.uuid4().hex}")
    object: Literal["text_completion"] = "text_completion"
    created: int = Field(default_factory=lambda: int(time.time()))
    model: str
    choices: list[CompletionChoice]
    usage: UsageInfo


class ErrorInfo(_Model):
    message: str
    type: str
    param: str | None = None
    code: int


class ErrorResponse(_Model):
    """OpenAI-style error body, as vLLM returns it."""

    error: ErrorInfo


def spans_from_versions(labels: Sequence[str]) -> list[WeightVersionSpan]:
    """Per-token weight-version labels → half-open spans, one per run of equal labels (vLLM's
    ``weight_versions``)."""
    spans: list[WeightVersionSpan] = []
    start = 0
    for version, run in itertools.groupby(labels):
        size = sum(1 for _ in run)
        spans.append(WeightVersionSpan(version=version, start=start, end=start + size))
        start += size
    return spans


def error_body(message: str, code: int, kind: str = "BadRequestError") -> dict[str, Any]:
    """An OpenAI-style error body (one line of message)."""
    line = " ".join(message.split())
    return ErrorResponse(error=ErrorInfo(message=line, type=kind, code=code)).model_dump()
