"""The engines must serve the checkpoint as asked: context length vs the checkpoint's positions
before the start, ``/v1/models`` (and vLLM's dev-mode ``/server_info``) once they answer."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from arctic_swe.cluster import load_cluster
from arctic_swe.cluster._errors import ContextLengthError, PreflightError, ServedModelError
from arctic_swe.cluster._model_checks import (
    VLLM_DTYPE,
    check_context_length,
    check_served,
    checkpoint_positions,
    expected_max_model_len,
)

from .conftest import write_topology


def test_positions_are_read_inside_text_config_too(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps({"model_type": "qwen3_5", "text_config": {"max_position_embeddings": 262144}})
    )
    assert checkpoint_positions(tmp_path) == 262144
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 4096}))
    assert checkpoint_positions(tmp_path) == 4096
    (tmp_path / "config.json").write_text("{}")
    assert checkpoint_positions(tmp_path) is None
    (tmp_path / "config.json").write_text("[")
    with pytest.raises(PreflightError, match=r"model\.path: unreadable"):
        checkpoint_positions(tmp_path)


def test_a_context_longer_than_the_checkpoint_names_both_numbers(
    checkpoint: Path, tmp_path: Path
) -> None:
    positions = checkpoint_positions(checkpoint)
    assert positions == 32768  # what `arctic-swe model init` writes
    too_long = load_cluster(
        write_topology(tmp_path, checkpoint, engines=f"count = 1\nmax_model_len = {positions + 1}")
    )
    with pytest.raises(ContextLengthError) as caught:
        check_context_length(too_long, checkpoint)
    assert (caught.value.max_model_len, caught.value.positions) == (positions + 1, positions)
    fits = load_cluster(
        write_topology(tmp_path, checkpoint, engines=f"count = 1\nmax_model_len = {positions}")
    )
    check_context_length(fits, checkpoint)
    default = load_cluster(write_topology(tmp_path, checkpoint))
    check_context_length(default, checkpoint)
    assert expected_max_model_len(default, checkpoint) == positions  # 0: the checkpoint's
    assert expected_max_model_len(fits, checkpoint) == positions


def _served(url: str, **wanted: Any) -> None:
    asyncio.run(check_served([url], **wanted))


def test_an_engine_serving_what_was_asked_passes(engine: tuple[str, dict[str, Any]]) -> None:
    url, answers = engine
    _served(url, max_model_len=4096)
    _served(url, max_model_len=None)  # engines by URL without engines.max_model_len
    _served(url, max_model_len=4096, dtype="bfloat16")  # no /server_info: dtype not reported
    answers["/server_info"] = {"vllm_config": {"model_config": {"dtype": "torch.bfloat16"}}}
    assert VLLM_DTYPE == "bfloat16"
    _served(url, max_model_len=4096, dtype=VLLM_DTYPE)


@pytest.mark.parametrize(
    ("change", "wanted", "message"),
    [
        ({"/v1/models": {"data": [{"id": "m", "max_model_len": 4096}]}}, {}, "serves ['m'], not"),
        ({}, {"max_model_len": 8192}, "serves max_model_len = 4096, the launcher asked for 8192"),
        (
            {"/server_info": {"vllm_config": {"model_config": {"dtype": "torch.float16"}}}},
            {"dtype": "bfloat16"},
            "computes in torch.float16, the launcher asked for --dtype bfloat16",
        ),
        ({"/v1/models": {"models": []}}, {}, "GET /v1/models gave no model list (KeyError"),
    ],
)
def test_a_mismatch_is_one_typed_error_naming_the_engine(
    engine: tuple[str, dict[str, Any]], change: dict[str, Any], wanted: dict[str, Any], message: str
) -> None:
    url, answers = engine
    answers.update(change)
    with pytest.raises(ServedModelError) as caught:
        _served(url, **{"max_model_len": 4096, **wanted})
    assert caught.value.url == url
    assert str(caught.value).startswith(f"engine {url}: {message}")
    assert "\n" not in str(caught.value)
