"""The wire format of vLLM 0.33's completions as the RL client reads and writes it (Arctic-SWE
§3.3): the request body (token ids in, neutral sampling), the answer (token ids, raw log-probs,
weight-version spans) and the error bodies of both vLLM and ``arctic-swe serve``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from arctic_swe.engine._errors import EngineProtocolError
from load_router import GenerateRequest, GenerateResult

#: The label vLLM gives its weights until someone sets one (``EngineCore._weight_version``):
#: the weights it started with, i.e. the client's ``initial_version``.
START_LABEL = "default"

#: Sampling the trainer's log-probs assume (temperature-1 samples from the full distribution):
#: sent explicitly on every request, so no default of the server or of the checkpoint's
#: ``generation_config.json`` can reshape the distribution the rollout log-probs come from.
NEUTRAL_SAMPLING: Mapping[str, float | int] = {
    "temperature": 1.0,
    "top_p": 1.0,
    "top_k": 0,  # vLLM's "off" (0 or -1)
    "min_p": 0.0,
    "repetition_penalty": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
}


def completion_body(
    request: GenerateRequest, *, model: str, stop_token_ids: Sequence[int] | None
) -> dict[str, Any]:
    """The ``POST /v1/completions`` body of one turn: the whole history as token ids, one
    choice, the sampled token's raw log-prob (``logprobs=0``), token ids and weight-version
    spans back, special tokens kept, neutral sampling (:data:`NEUTRAL_SAMPLING`)."""
    body: dict[str, Any] = {
        "model": model,
        "prompt": list(request.prompt_ids),
        "max_tokens": request.max_new_tokens,
        **NEUTRAL_SAMPLING,
        "logprobs": 0,
        "return_token_ids": True,
        "return_weight_versions": True,
        "skip_special_tokens": False,
    }
    if request.seed is not None:
        body["seed"] = request.seed
    if stop_token_ids is not None:
        body["stop_token_ids"] = list(stop_token_ids)
    return body


def parse_completion(reply: object, *, start_version: int = 0) -> GenerateResult:
    """A vLLM ``text_completion`` answer (one choice, ``return_token_ids`` and
    ``return_weight_versions`` set, ``logprobs=0``) → :class:`GenerateResult`.

    ``weight_versions`` spans are half-open output-token ranges labelled with the decimal
    policy version, or :data:`START_LABEL` for weights nobody labelled yet (read as
    ``start_version``); they must tile ``[0, T)`` in order. Raises :class:`EngineProtocolError`.
    """
    try:
        choice = reply["choices"][0]  # type: ignore[index]
        # Any: attrs' tuple converter confuses mypy's generics
        token_ids: Any = tuple(int(t) for t in choice["token_ids"])
        logprobs: Any = tuple(float(x) for x in choice["logprobs"]["token_logprobs"])
        spans = choice["weight_versions"]
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise EngineProtocolError(
            f"not a completion with token ids and log-probs: {exc!r}"
        ) from exc
    versions: Any = versions_from_spans(spans, len(token_ids), start_version=start_version)
    if versions:
        newest = versions[-1]
    elif spans:
        newest = version_label(spans[-1].get("version"), start_version=start_version)
    else:
        newest = start_version
    try:
        return GenerateResult(
            token_ids=token_ids,
            logprobs=logprobs,
            policy_version=newest,
            token_versions=versions,
        )
    except ValueError as exc:  # load_router.InvalidArgumentError: lengths, negative ids
        raise EngineProtocolError(f"inconsistent completion: {exc}") from exc


def finish_reason(reply: object) -> str | None:
    """``choices[0].finish_reason`` of a completion answer (``None`` if absent)."""
    try:
        reason = reply["choices"][0].get("finish_reason")  # type: ignore[index]
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    return reason if isinstance(reason, str) else None


def joined(parts: Sequence[GenerateResult]) -> GenerateResult:
    """One turn from its pieces (a turn continued after aborts), in order."""
    if len(parts) == 1:
        return parts[0]
    ids: Any = tuple(t for p in parts for t in p.token_ids)
    logprobs: Any = tuple(x for p in parts for x in p.logprobs)
    versions: Any = tuple(v for p in parts for v in p.token_versions)
    newest = versions[-1] if versions else parts[-1].policy_version
    return GenerateResult(
        token_ids=ids, logprobs=logprobs, policy_version=newest, token_versions=versions
    )


def versions_from_spans(
    spans: object, num_tokens: int, *, start_version: int = 0
) -> tuple[int, ...]:
    """Per-token versions from vLLM ``WeightVersionSpan`` dicts tiling ``[0, num_tokens)``."""
    if not isinstance(spans, Sequence) or isinstance(spans, str):
        raise EngineProtocolError(f"weight_versions must be a list of spans, got {spans!r}")
    versions: list[int] = []
    for span in spans:
        if not isinstance(span, Mapping):
            raise EngineProtocolError(f"a weight-version span must be an object: {span!r}")
        start, end = span.get("start"), span.get("end")
        if not isinstance(start, int) or not isinstance(end, int) or start != len(versions):
            raise EngineProtocolError(f"weight-version spans do not tile the output: {spans!r}")
        if end < start:
            raise EngineProtocolError(f"weight-version span ends before it starts: {span!r}")
        label = version_label(span.get("version"), start_version=start_version)
        versions.extend([label] * (end - start))
    if len(versions) != num_tokens:
        raise EngineProtocolError(
            f"weight-version spans cover {len(versions)} tokens, the output has {num_tokens}"
        )
    return tuple(versions)


def version_label(label: object, *, start_version: int = 0) -> int:
    """A weight-version label → the policy version: a decimal string, or :data:`START_LABEL`
    (``start_version``). Anything else is :class:`EngineProtocolError` — an engine labelled by
    somebody else's trainer, whose tokens this run must not train on."""
    if label == START_LABEL:
        return start_version
    text = str(label)
    if not text.isdecimal():
        raise EngineProtocolError(
            f"weight version {label!r} is neither a decimal version nor {START_LABEL!r}"
        )
    return int(text)


def parse_prometheus(text: str) -> dict[str, float]:
    """Prometheus text exposition → ``{"name{labels}": value}`` (comments skipped)."""
    samples: dict[str, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        try:
            samples[name] = float(value)
        except ValueError:
            continue
    return samples


def error_message(response: httpx.Response) -> str:
    """The message of an OpenAI-style (``{"error": {"message": …}}``), FastAPI
    (``{"detail": …}``), vLLM RL-route (``{"error": "…"}``) or plain error body, on one
    line."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip().replace("\n", " ")[:500]
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body))
        if isinstance(error, dict):
            error = error.get("message", error)
        return str(error)[:500]
    return str(body)[:500]
