"""Tests for ``arctic_swe.warmstart._sft`` against a slow float64 reference."""

import itertools
import math
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.harness import Trajectory
from arctic_swe.model import PolicyPreset, build_policy, policy_config
from arctic_swe.warmstart import (
    IGNORE,
    SFTConfig,
    SFTStep,
    StageCheckpoint,
    WarmStartError,
    assistant_loss,
    collate,
    train_sft,
)

SMALL = PolicyPreset(hidden_size=32, intermediate_size=64, head_dim=16, linear_key_head_dim=16,
                     linear_value_head_dim=16)  # fmt: skip
VOCAB = 40


def _trajectory(ids: list[int], mask: list[bool]) -> Trajectory:
    n = len(ids)
    return Trajectory("t", 1, tuple(ids), tuple(mask), (0.0,) * n, (-1,) * n, (), "submitted",
                      1.0, 1.0)  # fmt: skip


def _reference_loss(model: torch.nn.Module, batch: list[Trajectory]) -> float:
    """One sequence at a time, float64 log-softmax, explicit loop over assistant tokens."""
    total, count = 0.0, 0
    for trajectory in batch:
        ids = torch.tensor([trajectory.token_ids])
        logits = model(input_ids=ids).logits[0].double()
        logp = torch.log_softmax(logits, dim=-1)
        for t in range(1, len(trajectory.token_ids)):
            if trajectory.loss_mask[t]:
                total -= float(logp[t - 1, trajectory.token_ids[t]])
                count += 1
    return total / count


def test_collate_labels_only_assistant_tokens() -> None:
    a = _trajectory([3, 4, 5, 6, 7], [False, False, True, True, False])
    b = _trajectory([8, 9, 10], [False, True, True])
    inputs, labels = collate([a, b], pad_id=0)
    assert inputs.tolist() == [[3, 4, 5, 6, 7], [8, 9, 10, 0, 0]]
    assert labels.tolist() == [
        [IGNORE, 5, 6, IGNORE, IGNORE],
        [9, 10, IGNORE, IGNORE, IGNORE],
    ]


def test_assistant_loss_matches_the_float64_reference() -> None:
    model = build_policy(policy_config(VOCAB, SMALL), seed=2)
    gen = torch.Generator().manual_seed(0)
    batch = []
    for length in (9, 14, 6):
        ids = torch.randint(1, VOCAB, (length,), generator=gen).tolist()
        mask = [i >= length // 2 for i in range(length)]
        batch.append(_trajectory(ids, mask))
    inputs, labels = collate(batch, pad_id=0)
    with torch.no_grad():
        got = float(assistant_loss(model, inputs, labels))
        want = _reference_loss(model, batch)
    assert math.isclose(got, want, rel_tol=1e-5)


def test_training_fits_the_assistant_tokens() -> None:
    # Stock numerics: this checks the SFT loop, and the patched train-mode path is ~4x slower
    # on CPU at this size (the loss is the same function of the weights either way).
    model = build_policy(policy_config(VOCAB, SMALL), seed=3, patch_numerics=False)
    ids = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    mask = [False] * 6 + [True] * 6
    data = [
        _trajectory(ids, mask),
        _trajectory([1, 2, 3, 13, 14, 15, 16], [False] * 3 + [True] * 4),
    ]
    steps = train_sft(
        model, data, pad_id=0, config=SFTConfig(steps=25, batch_size=2, lr=2e-2, warmup_steps=2)
    )
    assert len(steps) == 25
    assert steps[-1].loss < 0.3 * steps[0].loss
    assert all(s.tokens == 6 + 4 for s in steps)
    assert not model.training


def test_bad_config_and_empty_data_are_refused() -> None:
    for fields in (
        {"steps": 0},
        {"batch_size": -1},
        {"lr": 0.0},
        {"grad_clip": 0.0},
        {"final_lr_fraction": 1.5},
    ):
        with pytest.raises(WarmStartError):
            SFTConfig(**fields)  # type: ignore[arg-type]
    model = build_policy(policy_config(VOCAB, SMALL), seed=3)
    with pytest.raises(WarmStartError, match="no trajectory"):
        train_sft(model, [_trajectory([1, 2], [False, False])], pad_id=0)


@given(
    steps=st.integers(1, 400),
    warmup=st.integers(0, 50),
    final=st.floats(0.0, 1.0),
)
def test_schedule_warms_up_then_decays_to_the_final_fraction(
    steps: int, warmup: int, final: float
) -> None:
    config = SFTConfig(steps=steps, warmup_steps=warmup, final_lr_fraction=final)
    factors = [config.lr_factor(step) for step in range(steps)]
    assert all(0.0 <= f <= 1.0 + 1e-12 for f in factors)
    ramp, rest = factors[:warmup], factors[warmup:]
    assert all(a < b for a, b in itertools.pairwise(ramp))
    assert all(a >= b - 1e-12 for a, b in itertools.pairwise(rest))
    if rest:
        assert rest[0] == pytest.approx(1.0)
    if len(rest) > 1:
        assert rest[-1] == pytest.approx(final)


class _StopError(Exception):
    """Stands for the interrupt: raised from ``on_step`` after a given step."""


def _stop_after(step: int) -> Callable[[SFTStep], None]:
    def on_step(record: SFTStep) -> None:
        if record.step == step:
            raise _StopError

    return on_step


def test_an_interrupted_fine_tune_resumes_to_the_same_weights(tmp_path: Path) -> None:
    data = [
        _trajectory([1, 2, 3, 4, 5, 6], [False, False, True, True, True, True]),
        _trajectory([1, 7, 8, 9, 10], [False, True, True, True, True]),
        _trajectory([2, 11, 12, 13], [False, False, True, True]),
    ]  # 3 trajectories, batches of 2: the epoch order spans checkpoints
    config = SFTConfig(steps=7, batch_size=2, lr=1e-2, warmup_steps=1)

    def fresh() -> torch.nn.Module:
        return build_policy(policy_config(VOCAB, SMALL), seed=4, patch_numerics=False)

    straight = fresh()
    expected = train_sft(straight, data, pad_id=0, config=config)
    checkpoint = StageCheckpoint(tmp_path / "sft.pt", every=2)
    with pytest.raises(_StopError):
        train_sft(fresh(), data, 0, config, _stop_after(4), checkpoint=checkpoint)  # saved at 4
    seen: list[int] = []
    resumed = fresh()  # a new process: the weights come from the checkpoint
    history = train_sft(
        resumed, data, 0, config, lambda s: seen.append(s.step), checkpoint=checkpoint
    )
    assert seen == [4, 5, 6]  # step 4 ran but was not saved: it runs again
    assert [s.loss for s in history] == pytest.approx([s.loss for s in expected], rel=1e-5)
    for (name, got), want in zip(
        resumed.state_dict().items(), straight.state_dict().values(), strict=True
    ):
        assert torch.allclose(got, want, atol=1e-6), name
