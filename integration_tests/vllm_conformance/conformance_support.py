"""Helpers shared by the vLLM-conformance fixtures and tests: the tiny policy, its checkpoint
directories, and the handle of one served stand-in engine (Arctic-SWE §3.3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from arctic_swe.model import build_policy, policy_config, save_policy

VOCAB = 96


def tiny_policy(seed: int = 0) -> Any:
    """The engine tests' tiny hybrid policy (3 Gated DeltaNet + 1 attention layer), its final
    norm gain raised so the next-token distribution is far from flat."""
    model = build_policy(policy_config(VOCAB), seed)
    with torch.no_grad():
        model.model.norm.weight.fill_(4.0)
    return model


def write_checkpoint(path: Path, seed: int) -> Path:
    """A Hugging Face checkpoint directory (``config.json`` + ``model.safetensors``) of a tiny
    policy: what ``collective_rpc("reload_weights")`` is pointed at."""
    return save_policy(tiny_policy(seed), path)


class Served:
    """One stand-in engine behind vLLM's routers on 127.0.0.1."""

    def __init__(self, client: Any, server: Any) -> None:
        self.client = client  # vllm_stand_in.StandInEngineClient
        self.server = server  # vllm_stand_in.LoopbackServer
        self.url: str = server.url
