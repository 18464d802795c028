"""The recipe's ``vllm serve`` command line (no vLLM needed: it is only built and printed)."""

from __future__ import annotations

import json
import shlex

from arctic_swe.serve import VllmServeSpec, shell_line, vllm_command, vllm_environment


def _flag(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_the_command_carries_the_recipes_flags() -> None:
    command = vllm_command(VllmServeSpec(model="/ckpt", port=8123, max_num_seqs=48))
    assert command[:3] == ["vllm", "serve", "/ckpt"]
    assert json.loads(_flag(command, "--weight-transfer-config")) == {"backend": "nccl"}
    assert _flag(command, "--mamba-ssm-cache-dtype") == "float32"
    assert _flag(command, "--logprobs-mode") == "raw_logprobs"
    assert "--enable-prefix-caching" in command
    # neutral server-side sampling defaults: not the checkpoint's generation_config.json
    assert _flag(command, "--generation-config") == "vllm"
    assert _flag(command, "--port") == "8123"
    assert _flag(command, "--max-num-seqs") == "48"
    assert "--max-model-len" not in command
    limited = vllm_command(VllmServeSpec(model="/ckpt", max_model_len=4096))
    assert _flag(limited, "--max-model-len") == "4096"


def test_the_rl_routes_need_dev_mode_and_the_shell_line_round_trips() -> None:
    assert vllm_environment({"PATH": "/bin"}) == {"PATH": "/bin", "VLLM_SERVER_DEV_MODE": "1"}
    command = vllm_command(VllmServeSpec(model="/path with space/ckpt"))
    line = shell_line(command)
    assert line.startswith("VLLM_SERVER_DEV_MODE=1 vllm serve ")
    assert shlex.split(line)[1:] == command
