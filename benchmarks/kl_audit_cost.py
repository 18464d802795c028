"""Cost of the per-update mismatch-KL-by-layer-type audit (``metrics.kl_by_layer_tokens``).

Times ``arctic_swe.trainer.audit_layer_types`` (hybrid-numerics' ``mismatch_audit`` on one
rollout window) on the tiny policy shape for several scored-token counts after a fixed prompt,
against a baseline measured in the same run: one trainer step (forward + backward + AdamW) on
a batch of the tiny preset's size (16 rollouts of prompt + 160 tokens). One torch thread, as
the loop runs. Prints one JSON object.

    uv run --frozen --all-packages --all-extras --no-extra vllm python benchmarks/kl_audit_cost.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch

from arctic_swe.config import TrainerSection
from arctic_swe.model import policy_config
from arctic_swe.trainer import Trainer, TrainSample, audit_layer_types, build_fp32_policy

VOCAB = 1024


def _sample(g: torch.Generator, prompt: int, scored: int, advantage: float) -> TrainSample:
    ids = tuple(torch.randint(0, VOCAB, (prompt + scored,), generator=g).tolist())
    mask = tuple(i >= prompt for i in range(len(ids)))
    return TrainSample(ids, mask, tuple(-7.0 if m else 0.0 for m in mask), advantage)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompt", type=int, default=300)
    parser.add_argument("--tokens", type=int, nargs="+", default=[16, 64, 128])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    load_before, g = os.getloadavg(), torch.Generator().manual_seed(0)
    model = build_fp32_policy(policy_config(VOCAB), seed=0)
    trainer = Trainer(model, TrainerSection())
    batch = [_sample(g, args.prompt, 160, 0.5 if i % 2 else -0.5) for i in range(16)]
    step_s = []
    for _ in range(args.repeats):
        began = time.perf_counter()
        trainer.step(batch)
        step_s.append(time.perf_counter() - began)
    audits = {}
    for tokens in args.tokens:
        sample = _sample(g, args.prompt, tokens, 0.5)
        times = [audit_layer_types(model, sample, tokens).seconds for _ in range(args.repeats)]
        audits[str(tokens)] = {
            "median_s": round(statistics.median(times), 3),
            "ratio_to_train_step": round(statistics.median(times) / statistics.median(step_s), 3),
        }
    print(
        json.dumps(
            {
                "benchmark": "kl_audit_cost",
                "prompt_tokens": args.prompt,
                "repeats": args.repeats,
                "train_step_median_s": round(statistics.median(step_s), 3),
                "audit_by_scored_tokens": audits,
                "loadavg_before": [round(x, 2) for x in load_before],
                "loadavg_after": [round(x, 2) for x in os.getloadavg()],
                "torch_threads": 1,
            }
        )
    )


if __name__ == "__main__":
    main()
