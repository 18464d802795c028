"""What an AdamW step on an all-zero-advantage batch does, and whether skipping it matters.

A batch whose every group is all-0 or all-1 has zero advantages, hence zero gradient; AdamW
still steps, moving every weight by its bias-corrected momentum ``m/(sqrt(v)+eps)`` — a replay
of the last informative steps with no new data. ``trainer.skip_empty_steps`` skips that step.

Deterministic replay, two arms on identical batches (``skip_empty_steps`` false / true): the
tiny preset's policy shape and optimizer (lr 1e-4, β 0.9/0.98, clip 1), a pool of 4 fixed
"tasks" of 8 rollouts each — tasks 0 and 1 with mixed rewards, task 2 all-failed, task 3
all-solved — and 2 tasks drawn per update from a seeded RNG, so a batch is empty when both
drawn tasks are uniform (1 in 6 draws; the default stress test had 6 of 36). Rollout log-probs
are the trainer's own (on-policy, ω = 1). Reports, per empty step of the stepping arm, the
parameter change against the preceding real step's (norm ratio and cosine), how far the arms
end apart relative to how far they moved, and the learned margin: mean per-token log p of the
solved rollouts minus the failed ones of tasks 0-1. Prints one JSON object.

    uv run --frozen --all-packages --all-extras --no-extra vllm python benchmarks/empty_steps.py
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time

import torch

from arctic_swe.config import TrainerSection
from arctic_swe.model import policy_config
from arctic_swe.trainer import Trainer, TrainSample, build_fp32_policy
from cispo_loss import group_advantages

VOCAB, PROMPT, LENGTH, ROLLOUTS = 1024, 16, 64, 8
REWARDS = ([1, 0, 1, 0, 0, 1, 0, 0], [0, 1, 0, 0, 0, 0, 1, 1], [0] * 8, [1] * 8)


def _pool(seed: int) -> list[list[tuple[tuple[int, ...], float]]]:
    g = torch.Generator().manual_seed(seed)
    pool = []
    for rewards in REWARDS:
        prompt = torch.randint(0, VOCAB, (PROMPT,), generator=g).tolist()
        rows = [
            (tuple(prompt + torch.randint(0, VOCAB, (LENGTH - PROMPT,), generator=g).tolist()), r)
            for r in rewards
        ]
        pool.append([(ids, float(r)) for ids, r in rows])
    return pool


def _schedule(updates: int, seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    return [tuple(rng.sample(range(len(REWARDS)), 2)) for _ in range(updates)]  # type: ignore[misc]


def _batch(
    trainer: Trainer, groups: list[list[tuple[tuple[int, ...], float]]]
) -> list[TrainSample]:
    mask = tuple(i >= PROMPT for i in range(LENGTH))
    rewards = torch.tensor([r for g in groups for _, r in g], dtype=torch.float64)
    ids = torch.tensor([k for k, g in enumerate(groups) for _ in g])
    advantages = group_advantages(rewards, ids).tolist()
    samples = []
    for (tokens, _), advantage in zip([row for g in groups for row in g], advantages, strict=True):
        probe = TrainSample(tokens, mask, (0.0,) * LENGTH, 0.0)
        logprobs = [0.0, *trainer.recompute_logprobs(probe).tolist()]
        rollout = tuple(min(lp, 0.0) if m else 0.0 for lp, m in zip(logprobs, mask, strict=True))
        samples.append(TrainSample(tokens, mask, rollout, float(advantage)))
    return samples


def _flat(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1).double() for p in model.parameters()])


def _margin(trainer: Trainer, pool: list[list[tuple[tuple[int, ...], float]]]) -> float:
    mask = tuple(i >= PROMPT for i in range(LENGTH))
    good, bad = [], []
    for task in pool[:2]:
        for tokens, reward in task:
            lp = trainer.recompute_logprobs(TrainSample(tokens, mask, (0.0,) * LENGTH, 0.0))
            (good if reward else bad).append(float(lp[PROMPT - 1 :].mean()))
    return sum(good) / len(good) - sum(bad) / len(bad)


def replay(skip: bool, updates: int, seed: int) -> dict[str, object]:
    model = build_fp32_policy(policy_config(VOCAB), seed=seed)
    trainer = Trainer(model, TrainerSection(skip_empty_steps=skip))
    pool, start = _pool(seed), _flat(model)
    before, last_real = start, None
    empty_steps, ratios, cosines = [], [], []
    for update, draw in enumerate(_schedule(updates, seed), start=1):
        samples = _batch(trainer, [pool[k] for k in draw])
        trainer.step(samples)
        after = _flat(model)
        delta = after - before
        if all(s.advantage == 0.0 for s in samples):
            empty_steps.append(update)
            if last_real is not None and last_real.norm() > 0:
                ratios.append(float(delta.norm() / last_real.norm()))
                cosines.append(float(delta @ last_real / (delta.norm() * last_real.norm() + 1e-30)))
        else:
            last_real = delta
        before = after
    return {
        "final": before,
        "start": start,
        "empty_steps": empty_steps,
        "empty_to_real_norm_ratio": [round(r, 4) for r in ratios],
        "empty_vs_real_cosine": [round(c, 4) for c in cosines],
        "margin": _margin(trainer, pool),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=36)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    torch.set_num_threads(1)
    load_before, began = os.getloadavg(), time.perf_counter()
    per_seed = []
    for seed in args.seeds:
        step, skip = replay(False, args.updates, seed), replay(True, args.updates, seed)
        moved = float((skip["final"] - skip["start"]).norm())  # type: ignore[operator]
        apart = float((step["final"] - skip["final"]).norm())  # type: ignore[operator]
        per_seed.append(
            {
                "seed": seed,
                "empty_steps": step["empty_steps"],
                "empty_to_real_norm_ratio": step["empty_to_real_norm_ratio"],
                "empty_vs_real_cosine": step["empty_vs_real_cosine"],
                "arms_apart_over_distance_moved": round(apart / moved, 4),
                "margin_stepping": round(float(step["margin"]), 5),  # type: ignore[arg-type]
                "margin_skipping": round(float(skip["margin"]), 5),  # type: ignore[arg-type]
            }
        )
    print(
        json.dumps(
            {
                "benchmark": "empty_steps",
                "updates": args.updates,
                "per_seed": per_seed,
                "seconds": round(time.perf_counter() - began, 1),
                "loadavg_before": [round(x, 2) for x in load_before],
                "loadavg_after": [round(x, 2) for x in os.getloadavg()],
                "torch_threads": 1,
            }
        )
    )


if __name__ == "__main__":
    main()
