"""One FSDP2 training step of a random-init Qwen3.5 policy on one GPU: tokens/s and peak memory.

The trainer process's exact step (:class:`arctic_swe.distributed.ShardedTrainer`: FSDP2 via
``fully_shard`` per decoder layer + root, CISPO with the global normaliser, AdamW β2 = 0.98,
gradient clipping over the sharded gradient) under the hybrid-numerics precision policy: FP32
master parameters (so ``A_log``, ``dt_bias`` and the norm gains stay FP32), the forward under
bf16 autocast on CUDA, the recurrent state FP32 (Arctic-SWE §3.3). A one-rank process group
(nccl on CUDA) makes FSDP2's collectives real but local.

Models: ``tiny`` (the embedded preset, vocabulary 4096) and ``0.5b`` (hidden 1024, 24 layers in
the 3:1 Gated DeltaNet : attention pattern, vocabulary 151 936: about 0.5 B parameters). Each
is timed after one warm-up step; reported per model: step seconds (median of ``--steps``),
trained tokens/s (all tokens of the batch / step seconds), peak allocated GPU memory, parameter
count and the dtypes the precision policy left on ``A_log`` / norms / projections.

``--smoke`` runs the tiny model on CPU (gloo, one rank, a few short sequences) in seconds, so
the script is checked in CI; without CUDA and without ``--smoke`` it prints one JSON object
saying it was skipped. Prints one JSON object as the last stdout line.

    uv run --frozen --all-packages --all-extras python benchmarks/gpu_train.py
    uv run --frozen --all-packages --all-extras python benchmarks/gpu_train.py --smoke
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import time
from typing import Any

import torch
import torch.distributed as dist

from arctic_swe.config import TrainerSection
from arctic_swe.distributed import ShardedTrainer
from arctic_swe.model import PolicyPreset, policy_config
from arctic_swe.trainer import TrainSample, build_fp32_policy

LINEAR, FULL = "linear_attention", "full_attention"
MODELS: dict[str, tuple[PolicyPreset, int]] = {
    "tiny": (PolicyPreset(), 4096),
    "0.5b": (
        PolicyPreset(
            hidden_size=1024,
            intermediate_size=3584,
            layer_types=(LINEAR, LINEAR, LINEAR, FULL) * 6,
            num_attention_heads=8,
            num_key_value_heads=2,
            head_dim=128,
            linear_num_key_heads=8,
            linear_num_value_heads=16,
            linear_key_head_dim=128,
            linear_value_head_dim=128,
        ),
        151_936,
    ),
}


def batch(vocab: int, rollouts: int, length: int, seed: int) -> list[TrainSample]:
    """``rollouts`` random sequences; the second half of each is trainable."""
    generator = torch.Generator().manual_seed(seed)
    samples = []
    for index in range(rollouts):
        ids = torch.randint(0, vocab, (length,), generator=generator).tolist()
        mask = tuple(i >= length // 2 for i in range(length))
        logprobs = tuple(-1.0 if m else 0.0 for m in mask)
        advantage = 0.5 if index % 2 == 0 else -0.5
        samples.append(TrainSample(tuple(ids), mask, logprobs, advantage))
    return samples


def dtypes(model: torch.nn.Module) -> dict[str, str]:
    """The parameter dtype of each kind the precision policy distinguishes."""
    seen: dict[str, set[str]] = {}
    for name, parameter in model.named_parameters():
        kind = next((k for k in ("A_log", "dt_bias", "norm") if k in name), "other")
        seen.setdefault(kind, set()).add(str(parameter.dtype).removeprefix("torch."))
    return {kind: ",".join(sorted(found)) for kind, found in sorted(seen.items())}


def measure(
    name: str, rollouts: int, length: int, steps: int, device: torch.device
) -> dict[str, Any]:
    preset, vocab = MODELS[name]
    policy = build_fp32_policy(policy_config(vocab, preset), seed=0)
    parameters = sum(p.numel() for p in policy.parameters())
    torch.nn.Module.to(policy, device)
    section = TrainerSection(lr=1e-5, micro_batch_rollouts=rollouts)
    trainer = ShardedTrainer(policy, section)
    samples = batch(vocab, rollouts, length, seed=1)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    trainer.step(samples)  # warm-up: allocator, kernels, AdamW state
    seconds = []
    for _ in range(steps):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        began = time.perf_counter()
        stats = trainer.step(samples)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        seconds.append(time.perf_counter() - began)
    median = statistics.median(seconds)
    return {
        "model": name,
        "parameters": parameters,
        "rollouts": rollouts,
        "tokens_per_rollout": length,
        "step_seconds": seconds,
        "tokens_per_second": rollouts * length / median,
        "trainable_tokens_per_second": stats.trainable_tokens / median,
        "peak_memory_gib": (
            torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None
        ),
        "grad_norm": stats.grad_norm,
        "parameter_dtypes": dtypes(trainer.scorer),
        "compute": "bf16 autocast" if device.type == "cuda" else "fp32",
    }


def init_one_rank(cuda: bool) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1")
    dist.init_process_group(backend="nccl" if cuda else "gloo", rank=0, world_size=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny model on CPU, seconds")
    parser.add_argument("--models", default="tiny,0.5b", help="comma-separated: tiny, 0.5b")
    parser.add_argument("--rollouts", type=int, default=8, help="sequences per step")
    parser.add_argument("--length", type=int, default=2048, help="tokens per sequence")
    parser.add_argument("--steps", type=int, default=3, help="timed steps after one warm-up")
    args = parser.parse_args()
    cuda = torch.cuda.is_available() and not args.smoke
    if not cuda and not args.smoke:
        print(json.dumps({"benchmark": "gpu_train", "skipped": True, "reason": "no CUDA device"}))
        return
    if args.smoke:
        torch.set_num_threads(1)
        models, rollouts, length, steps = ["tiny"], 2, 64, 1
    else:
        models, rollouts, length, steps = (
            args.models.split(","),
            args.rollouts,
            args.length,
            args.steps,
        )
    device = torch.device("cuda", 0) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    init_one_rank(cuda)
    try:
        results = [measure(name, rollouts, length, steps, device) for name in models]
    finally:
        dist.destroy_process_group()
    print(
        json.dumps(
            {
                "benchmark": "gpu_train",
                "smoke": args.smoke,
                "device": torch.cuda.get_device_name(device)
                if cuda
                else platform.processor() or "cpu",
                "torch": torch.__version__,
                "results": results,
            }
        )
    )


if __name__ == "__main__":
    main()
