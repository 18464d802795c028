"""Tests for ``arctic_swe.distributed._wire``: the ``/step`` batch encoding."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.distributed import decode_batch, encode_batch
from arctic_swe.distributed._wire import batch_digest
from arctic_swe.trainer import BatchError, TrainSample

VOCAB = 64


@st.composite
def samples(draw: st.DrawFn) -> tuple[TrainSample, tuple[int, ...]]:
    n = draw(st.integers(min_value=2, max_value=40))
    ids = draw(st.lists(st.integers(0, VOCAB - 1), min_size=n, max_size=n))
    mask = [False, *draw(st.lists(st.booleans(), min_size=n - 1, max_size=n - 1))]
    finite = st.floats(max_value=0.0, allow_nan=False, allow_infinity=False)
    logprobs = [draw(finite) if m else draw(st.floats(-5, 5)) for m in mask]
    advantage = draw(st.floats(-1e6, 1e6, allow_nan=False))
    versions = tuple(draw(st.lists(st.integers(-1, 50), min_size=n, max_size=n)))
    return TrainSample(tuple(ids), tuple(mask), tuple(logprobs), advantage), versions


@given(st.lists(samples(), min_size=1, max_size=6), st.integers(0, 1000))
def test_a_batch_round_trips_exactly_through_json(
    batch: list[tuple[TrainSample, tuple[int, ...]]], version: int
) -> None:
    items = [s for s, _ in batch]
    rows = [v for _, v in batch]
    body = json.loads(json.dumps(encode_batch(items, rows, version=version)))
    decoded = decode_batch(body, VOCAB)
    assert decoded.samples == tuple(items)  # floats compared bit for bit by ==
    assert decoded.versions == tuple(rows)
    assert decoded.version == version
    assert batch_digest(decoded.samples, decoded.versions) == batch_digest(items, rows)


def test_the_digest_sees_a_one_ulp_change() -> None:
    base = TrainSample((1, 2, 3), (False, True, True), (0.0, -0.5, -0.25), 0.5)
    nudged = TrainSample((1, 2, 3), (False, True, True), (0.0, -0.5, -0.25000000000000006), 0.5)
    rows = [(-1, 0, 0)]
    assert batch_digest([base], rows) != batch_digest([nudged], rows)


def _good() -> dict[str, Any]:
    return {
        "token_ids": [1, 2, 3],
        "loss_mask": [False, True, True],
        "rollout_logprobs": [0.0, -1.0, -2.0],
        "versions": [-1, 0, 0],
        "advantage": 0.5,
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"token_ids": [1, 2, 64]}, "token ids must lie in"),
        ({"token_ids": [1, 2, True]}, "list of integers"),
        ({"loss_mask": [0, 1, 1]}, "list of booleans"),
        ({"loss_mask": [False, True]}, "ragged"),
        ({"loss_mask": [True, True, True]}, "first token"),
        ({"rollout_logprobs": [0.0, 1.0, -1.0]}, "<= 0"),
        ({"rollout_logprobs": [0.0, "x", -1.0]}, "finite numbers"),
        ({"advantage": None}, "advantage"),
        ({"versions": [0, 0]}, "one per token"),
    ],
)
def test_bad_samples_are_named(change: dict[str, Any], message: str) -> None:
    with pytest.raises(BatchError, match=message):
        decode_batch({"samples": [{**_good(), **change}]}, VOCAB)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "JSON object"),
        ({}, "non-empty list"),
        ({"samples": []}, "non-empty list"),
        ({"samples": [_good()], "version": -1}, "version"),
        ({"samples": [{"token_ids": [1, 2]}]}, "missing"),
    ],
)
def test_bad_bodies_are_refused(body: Any, message: str) -> None:
    with pytest.raises(BatchError, match=message):
        decode_batch(body, VOCAB)


def test_nan_is_not_json_and_is_refused() -> None:
    body = json.loads(json.dumps({"samples": [{**_good(), "advantage": float("nan")}]}))
    with pytest.raises(BatchError, match="advantage"):
        decode_batch(body, VOCAB)
