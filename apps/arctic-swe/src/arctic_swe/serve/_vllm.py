"""The ``vllm serve`` command line of a recipe engine (vLLM 0.33; Arctic-SWE §3.3, §5).

Nothing here imports vLLM: the launcher builds the command and ``exec``\\ s it (or prints it),
so the CPU path never needs the ``vllm`` extra.

The flags the recipe needs, with vLLM 0.33's names:

* ``--weight-transfer-config '{"backend": "nccl"}'`` — native weight transfer: the trainer
  broadcasts new weights over NCCL through ``/init_weight_transfer_engine``,
  ``/start_weight_update``, ``/update_weights`` and ``/finish_weight_update``.
* ``VLLM_SERVER_DEV_MODE=1`` (environment) — vLLM mounts its RL routes (``/pause``,
  ``/resume``, ``/is_paused``, the weight-transfer routes) only in dev mode.
* ``--mamba-ssm-cache-dtype float32`` — the Gated DeltaNet recurrent state is kept in FP32
  between steps, as hybrid-numerics keeps it in the trainer (the recipe's FP32 state).
* ``--logprobs-mode raw_logprobs`` — returned log-probs are the model's own, before any
  sampling processor (the rollout log-probs of the CISPO ratio).
* ``--enable-prefix-caching`` — later turns of a rollout reuse the cached history; a keep-mode
  pause with ``clear_cache=true`` resets it, and running requests are preempted and recomputed
  under the new weights.
* ``--generation-config vllm`` — the server's default sampling parameters are vLLM's neutral
  ones. With vLLM's default (``auto``) the checkpoint's ``generation_config.json`` becomes the
  server-wide default, and a Qwen3.5 checkpoint ships ``top_k``, ``top_p`` and penalties there:
  any field a request leaves out would then be sampled with them, so the rollout distribution
  would no longer be the policy's own softmax that the CISPO ratio assumes. Requests also send
  the neutral values explicitly (temperature 1, top_p 1, top_k 0, min_p 0, no penalties); the
  flag makes a request that omits one safe too.

The dtype an engine computes in is checked from this command line (``--dtype``) and, once the
server runs in dev mode, from its ``/server_info`` (see ``arctic_swe.cluster``).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class VllmServeSpec:
    """What one vLLM engine server runs: a local Hugging Face checkpoint directory on one
    GPU. ``max_num_seqs`` is the engine's capacity (resident sequences);
    ``mamba_ssm_cache_dtype`` ``"bfloat16"`` is the "FP32 numerics off" ablation."""

    model: str
    host: str = "127.0.0.1"
    port: int = 8000
    served_model_name: str = "arctic-swe"
    max_num_seqs: int = 64
    max_model_len: int | None = None
    seed: int = 0
    dtype: str = "bfloat16"
    gpu_memory_utilization: float = 0.85
    weight_transfer_backend: str = "nccl"
    mamba_ssm_cache_dtype: str = "float32"
    generation_config: str = "vllm"  # neutral sampling defaults, not generation_config.json


def vllm_command(spec: VllmServeSpec) -> list[str]:
    """The ``vllm serve`` argv for ``spec`` (run it with :func:`vllm_environment`)."""
    command = [
        "vllm",
        "serve",
        spec.model,
        "--host",
        spec.host,
        "--port",
        str(spec.port),
        "--served-model-name",
        spec.served_model_name,
        "--dtype",
        spec.dtype,
        "--seed",
        str(spec.seed),
        "--max-num-seqs",
        str(spec.max_num_seqs),
        "--gpu-memory-utilization",
        str(spec.gpu_memory_utilization),
        "--weight-transfer-config",
        json.dumps({"backend": spec.weight_transfer_backend}),
        "--mamba-ssm-cache-dtype",
        spec.mamba_ssm_cache_dtype,
        "--logprobs-mode",
        "raw_logprobs",
        "--enable-prefix-caching",
        "--generation-config",
        spec.generation_config,
    ]
    if spec.max_model_len is not None:
        command += ["--max-model-len", str(spec.max_model_len)]
    return command


def vllm_environment(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` plus what the RL routes need (``VLLM_SERVER_DEV_MODE=1``)."""
    return {**base, "VLLM_SERVER_DEV_MODE": "1"}


def shell_line(command: list[str]) -> str:
    """The command as one copy-pasteable shell line, environment included."""
    return "VLLM_SERVER_DEV_MODE=1 " + shlex.join(command)
