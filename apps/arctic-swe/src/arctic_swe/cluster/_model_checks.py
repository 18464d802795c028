"""Checks that the engines serve the checkpoint as the launcher asked (Arctic-SWE §3.3).

Before anything starts, ``engines.max_model_len`` must fit the checkpoint's
``max_position_embeddings`` (read from ``config.json``, inside ``text_config`` for the
composite Qwen3.5 layout) — :class:`ContextLengthError`. The tokenizer files and the chat
template are checked with the rest of the checkpoint (``arctic_swe._hf_layout``).

Once the engines answer, each one's ``GET /v1/models`` must list the served model name the
launcher gave it with the ``max_model_len`` it asked for (``engines.max_model_len``, or the
checkpoint's ``max_position_embeddings`` when that is 0) — :class:`ServedModelError` naming
the engine's URL. Both vLLM 0.33 and ``arctic-swe serve`` report ``id`` and ``max_model_len``
there.

The compute dtype is reported by neither ``/v1/models``: vLLM reports it only through its
dev-mode ``GET /server_info?config_format=json`` (``vllm_config.model_config.dtype``, e.g.
``"torch.bfloat16"``), which the launcher's vLLM engines have (``VLLM_SERVER_DEV_MODE=1``), so
it is compared there when present; ``arctic-swe serve`` reports no dtype on any route (it
computes in FP32 on CPU), so its dtype is what its command line says — the planned argv,
which the tests check.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from arctic_swe._hf_layout import LayoutError, read_json
from arctic_swe.cluster._errors import ContextLengthError, PreflightError, ServedModelError
from arctic_swe.cluster._plan import SERVED_MODEL_NAME
from arctic_swe.cluster._topology import ClusterConfig
from arctic_swe.serve import VllmServeSpec


def checkpoint_positions(model_dir: Path) -> int | None:
    """The checkpoint's ``max_position_embeddings`` (``text_config`` first), ``None`` if absent."""
    try:
        raw = read_json(model_dir / "config.json")
    except LayoutError as exc:
        raise PreflightError(f"model.path: {exc}") from exc
    text = raw.get("text_config")
    for source in (text if isinstance(text, dict) else {}, raw):
        value = source.get("max_position_embeddings")
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def check_context_length(config: ClusterConfig, model_dir: Path) -> None:
    """``engines.max_model_len`` (the vLLM engines' ``--max-model-len`` too) fits the checkpoint."""
    wanted = config.engines.max_model_len
    positions = checkpoint_positions(model_dir)
    if wanted and positions is not None and wanted > positions:
        raise ContextLengthError(wanted, positions, str(model_dir / "config.json"))


def expected_max_model_len(config: ClusterConfig, model_dir: Path) -> int | None:
    """What the engines this launcher starts must report (``None``: nothing to compare)."""
    return config.engines.max_model_len or checkpoint_positions(model_dir)


async def check_served(
    urls: list[str],
    *,
    max_model_len: int | None,
    dtype: str = "",
    timeout: float = 30.0,
) -> None:
    """Every engine at ``urls`` serves :data:`SERVED_MODEL_NAME` with ``max_model_len`` (when
    given) and, where it reports one (vLLM's ``/server_info``), ``dtype`` (when given)."""
    import httpx

    async with httpx.AsyncClient(timeout=timeout) as client:
        problems = await asyncio.gather(
            *(_served_problem(client, url, max_model_len, dtype) for url in urls)
        )
    for url, problem in zip(urls, problems, strict=True):
        if problem is not None:
            raise ServedModelError(url, problem)


async def _served_problem(
    client: Any, url: str, max_model_len: int | None, dtype: str
) -> str | None:
    import httpx

    base = url.rstrip("/")
    try:
        response = await client.get(base + "/v1/models")
        response.raise_for_status()
        cards = response.json()["data"]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        return f"GET /v1/models gave no model list ({type(exc).__name__}: {exc})"
    ids = [card.get("id") for card in cards if isinstance(card, dict)]
    card = next(
        (c for c in cards if isinstance(c, dict) and c.get("id") == SERVED_MODEL_NAME), None
    )
    if card is None:
        return f"serves {ids}, not the model name {SERVED_MODEL_NAME!r} the launcher asked for"
    served_len = card.get("max_model_len")
    if max_model_len is not None and served_len != max_model_len:
        return f"serves max_model_len = {served_len}, the launcher asked for {max_model_len}"
    if dtype:
        reported = await _reported_dtype(client, base)
        if reported is not None and reported.removeprefix("torch.") != dtype:
            return f"computes in {reported}, the launcher asked for --dtype {dtype}"
    return None


async def _reported_dtype(client: Any, base: str) -> str | None:
    """vLLM's model dtype from its dev-mode ``/server_info``; ``None`` where not reported."""
    import httpx

    try:
        response = await client.get(base + "/server_info", params={"config_format": "json"})
        if response.status_code != 200:
            return None
        model_config = response.json()["vllm_config"]["model_config"]
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return None
    value = model_config.get("dtype") if isinstance(model_config, dict) else None
    return value if isinstance(value, str) else None


#: The dtype the launcher's vLLM engines are started with (``--dtype``).
VLLM_DTYPE = VllmServeSpec(model="").dtype
