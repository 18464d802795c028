from __future__ import annotations

import json
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.transfer import (
    DEFAULT_BUFFER_SIZE_BYTES,
    NcclInitInfo,
    TransferProtocolError,
    UpdateInfo,
    dtype_name,
    resolve_dtype,
)

GOOD_INIT: dict[str, Any] = {
    "master_address": "10.0.0.1",
    "master_port": 29500,
    "rank_offset": 1,
    "world_size": 2,
    "packed": True,
    "packed_buffer_size_bytes": 4096,
    "packed_num_buffers": 2,
}
DTYPES = ["bfloat16", "float32", "float16", "int64", "int32", "uint8", "bool", "float64"]


def test_init_round_trip_through_json() -> None:
    info = NcclInitInfo.from_payload(json.loads(json.dumps(GOOD_INIT)))
    assert info.payload() == GOOD_INIT
    assert NcclInitInfo.from_payload(info.payload()) == info


def test_init_defaults_are_vllms_worker_defaults() -> None:
    minimal = {
        k: GOOD_INIT[k] for k in ("master_address", "master_port", "rank_offset", "world_size")
    }
    info = NcclInitInfo.from_payload(minimal)
    assert (info.packed, info.packed_buffer_size_bytes, info.packed_num_buffers) == (
        False,
        DEFAULT_BUFFER_SIZE_BYTES,
        2,
    )


def test_init_refuses_the_unique_id_rendezvous() -> None:
    payload = {"nccl_unique_id_b64": "AAAA", "rank_offset": 1, "world_size": 2}
    with pytest.raises(TransferProtocolError, match="only the TCP rendezvous"):
        NcclInitInfo.from_payload(payload)


def test_init_treats_a_null_unique_id_as_absent() -> None:
    assert NcclInitInfo.from_payload({**GOOD_INIT, "nccl_unique_id_b64": None}).master_port == 29500


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"master_address": None}, "master_address and master_port"),
        ({"master_port": None}, "master_address and master_port"),
        ({"master_address": ""}, "master_address"),
        ({"master_port": 70000}, "master_port"),
        ({"master_port": True}, "master_port must be an integer"),
        ({"master_port": "29500"}, "master_port must be an integer"),
        ({"rank_offset": 0}, "rank_offset"),
        ({"rank_offset": 2}, r"rank_offset must lie in \[1, world_size=2\)"),
        ({"world_size": 1}, "world_size"),
        ({"packed": 1}, "packed must be a boolean"),
        ({"packed_buffer_size_bytes": 0}, "packed_buffer_size_bytes"),
        ({"packed_num_buffers": 0}, "packed_num_buffers"),
        ({"extra": 1}, r"unknown field\(s\) \['extra'\]"),
        ({"names": []}, "unknown field"),
    ],
)
def test_init_validation(change: dict[str, Any], message: str) -> None:
    with pytest.raises(TransferProtocolError, match=message):
        NcclInitInfo.from_payload({**GOOD_INIT, **change})


@pytest.mark.parametrize("missing", ["rank_offset", "world_size", "master_address"])
def test_init_missing_fields(missing: str) -> None:
    payload = {k: v for k, v in GOOD_INIT.items() if k != missing}
    with pytest.raises(TransferProtocolError, match=missing):
        NcclInitInfo.from_payload(payload)


def test_init_payload_must_be_an_object() -> None:
    with pytest.raises(TransferProtocolError, match="JSON object"):
        NcclInitInfo.from_payload([1, 2])  # type: ignore[arg-type]


update_infos = st.lists(
    st.tuples(st.sampled_from(DTYPES), st.lists(st.integers(0, 7), max_size=3).map(tuple)),
    max_size=6,
).map(
    lambda rows: UpdateInfo(
        tuple(f"model.layers.{i}.weight" for i in range(len(rows))),
        tuple(d for d, _ in rows),
        tuple(s for _, s in rows),
    )
)


@given(update_infos)
def test_update_round_trip_through_json(info: UpdateInfo) -> None:
    payload = json.loads(json.dumps(info.payload()))
    assert UpdateInfo.from_payload(payload) == info


def test_update_empty_is_the_reuse_form() -> None:
    assert UpdateInfo.from_payload({}).is_empty
    assert UpdateInfo.from_payload({"names": [], "dtype_names": [], "shapes": []}).is_empty
    assert UpdateInfo().payload() == {"names": [], "dtype_names": [], "shapes": []}
    assert not UpdateInfo(("a",), ("float32",), ((),)).is_empty


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"names": ["a"], "dtype_names": [], "shapes": [[1]]}, "dtype_names has 0"),
        ({"names": ["a"], "dtype_names": ["float32"], "shapes": []}, "shapes has 0"),
        ({"names": ["a"], "dtype_names": ["float33"], "shapes": [[1]]}, "'float33'"),
        ({"names": ["a"], "dtype_names": ["Tensor"], "shapes": [[1]]}, "not a torch dtype"),
        ({"names": ["a"], "dtype_names": ["float32"], "shapes": [[-1]]}, "shape of 'a'"),
        ({"names": ["a"], "dtype_names": ["float32"], "shapes": [[1.5]]}, "shape of 'a'"),
        ({"names": ["a"], "dtype_names": ["float32"], "shapes": [3]}, "list of ints"),
        ({"names": "ab", "dtype_names": [], "shapes": []}, "names must be a list"),
        ({"names": [1], "dtype_names": ["float32"], "shapes": [[1]]}, "not a string"),
        ({"names": ["a", "a"], "dtype_names": ["int8"] * 2, "shapes": [[1]] * 2}, "twice"),
        ({"weight_version": "3"}, "unknown field"),
    ],
)
def test_update_validation(payload: dict[str, Any], message: str) -> None:
    with pytest.raises(TransferProtocolError, match=message):
        UpdateInfo.from_payload(payload)


def test_describe_uses_vllms_dtype_names() -> None:
    pairs = [
        ("embed.weight", torch.zeros(3, 2, dtype=torch.bfloat16)),
        ("norm.weight", torch.zeros(2)),
        ("step", torch.tensor(7)),
    ]
    info = UpdateInfo.describe(pairs)
    assert info.payload() == {
        "names": ["embed.weight", "norm.weight", "step"],
        "dtype_names": ["bfloat16", "float32", "int64"],
        "shapes": [[3, 2], [2], []],
    }
    assert info.nbytes() == (12, 8, 8)
    assert info.dtypes == (torch.bfloat16, torch.float32, torch.int64)


@pytest.mark.parametrize(
    "dtype", [torch.bfloat16, torch.float16, torch.float32, torch.int64, torch.bool]
)
def test_dtype_names_round_trip(dtype: torch.dtype) -> None:
    assert resolve_dtype(dtype_name(dtype)) is dtype
