"""`MALFORMED_CORPUS` and `VALID_CORPUS`: named turns shipped as package data.

The malformed set covers the 13 classes of malformed Qwen3.5 turns that public stacks executed
anyway (Arctic-SWE §3.2) and more, including values that public parsers split or shorten (tag
variants, special-token text); each case names the codes it must raise. The valid set holds
turns that naive validators get wrong (HTML values, near-miss markup, NUL, a pre-filled
``<think>``). The JSON files live in ``corpus/``.
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

import attrs

from swe_formatcheck._tools import ToolCall


@attrs.frozen
class MalformedCase:
    """A turn that must be rejected.

    Attributes:
        name: a stable identifier (``duplicate_parameter``, ...).
        raw: the raw turn text.
        codes: codes the verdict must contain, in the order they are first found.
        note: why the case matters.
        dialect, reasoning, think_prefilled, stopped: the `check_turn` options to use.
    """

    name: str
    raw: str
    codes: tuple[str, ...]
    note: str
    dialect: str = "qwen3_coder"
    reasoning: str = "required"
    think_prefilled: bool = False
    stopped: bool = True


@attrs.frozen
class ValidCase:
    """A tricky turn that must be accepted with exactly `call` and `reasoning`."""

    name: str
    raw: str
    call: ToolCall
    reasoning: str | None
    note: str = ""
    dialect: str = "qwen3_coder"
    reasoning_mode: str = "required"
    think_prefilled: bool = False


def _load(name: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(
        files("swe_formatcheck").joinpath("corpus", name).read_text(encoding="utf-8")
    )
    return data


def _malformed() -> tuple[MalformedCase, ...]:
    return tuple(
        MalformedCase(**{**row, "codes": tuple(row["codes"])}) for row in _load("malformed.json")
    )


def _valid() -> tuple[ValidCase, ...]:
    return tuple(
        ValidCase(**{**row, "call": ToolCall(**row["call"])}) for row in _load("valid.json")
    )


#: Named malformed turns, each with the codes it must raise (all with the mini_swe_agent_plus tools).
MALFORMED_CORPUS: tuple[MalformedCase, ...] = _malformed()
#: Named tricky turns that must be accepted, with the exact call they hold.
VALID_CORPUS: tuple[ValidCase, ...] = _valid()
