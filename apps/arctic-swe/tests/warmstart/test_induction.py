"""Tests for ``arctic_swe.warmstart._induction``: the copy task's data, its loss against a
float64 reference, and that the stage installs in-context copying in a random-init policy."""

import math
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.model import PolicyPreset, build_policy, policy_config
from arctic_swe.warmstart import (
    InductionConfig,
    InductionStep,
    StageCheckpoint,
    WarmStartError,
    copy_batch,
    copy_loss,
    pretrain_induction,
)

SMALL = PolicyPreset(hidden_size=64, intermediate_size=128, head_dim=16, linear_key_head_dim=16,
                     linear_value_head_dim=16)  # fmt: skip
COPIER = PolicyPreset(hidden_size=64, intermediate_size=128)  # learns to copy in ~60 steps


@given(
    batch=st.integers(1, 6),
    span=st.integers(1, 12),
    first=st.integers(0, 20),
    extra=st.integers(2, 50),
    seed=st.integers(0, 2**31),
)
def test_copy_batch_is_x_sep_x_over_ordinary_tokens(
    batch: int, span: int, first: int, extra: int, seed: int
) -> None:
    config = InductionConfig(batch_size=batch, span=span)
    vocab = first + extra
    ids = copy_batch(torch.Generator().manual_seed(seed), config, vocab, first, sep=1)
    assert ids.shape == (batch, 2 * span + 1)
    assert torch.equal(ids[:, :span], ids[:, span + 1 :])
    assert bool((ids[:, span] == 1).all())
    assert int(ids[:, :span].min()) >= first
    assert int(ids[:, :span].max()) < vocab


def test_copy_loss_matches_a_float64_reference() -> None:
    torch.manual_seed(0)
    model = build_policy(policy_config(40, SMALL), seed=1)
    ids = copy_batch(
        torch.Generator().manual_seed(2), InductionConfig(batch_size=3, span=5), 40, 8, 2
    )
    with torch.no_grad():  # values only: the reference needs no graph
        loss, accuracy = copy_loss(model, ids, 5)
        logits = model(input_ids=ids).logits.double()
    terms, hits = [], 0
    for row in range(3):
        for position in range(5, 10):  # predicts tokens 6..10, the second copy
            logp = torch.log_softmax(logits[row, position], -1)
            target = int(ids[row, position + 1])
            terms.append(-float(logp[target]))
            hits += int(int(logp.argmax()) == target)
    assert math.isclose(float(loss), sum(terms) / len(terms), rel_tol=1e-5)
    assert accuracy == pytest.approx(hits / 15)


def test_the_stage_teaches_a_random_policy_to_copy() -> None:
    model = build_policy(policy_config(48, COPIER), seed=0)
    config = InductionConfig(steps=90, batch_size=16, span=8)
    held_out = copy_batch(torch.Generator().manual_seed(99), config, 48, 4, 2)
    with torch.no_grad():
        before = copy_loss(model, held_out, 8)[1]
    history = pretrain_induction(model, 48, 4, 2, config)
    with torch.no_grad():
        after = copy_loss(model, held_out, 8)[1]
    assert [s.step for s in history] == list(range(90))
    assert not model.training
    assert before < 0.2  # chance is 1/44
    assert after > 0.9, (before, after, history[-1])


@pytest.mark.parametrize(
    "fields",
    [{"steps": -1}, {"batch_size": 0}, {"span": True}, {"lr": 0.0}, {"grad_clip": -1.0}],
)
def test_bad_config_is_refused(fields: dict[str, object]) -> None:
    with pytest.raises(WarmStartError):
        InductionConfig(**fields)  # type: ignore[arg-type]


def test_a_vocabulary_without_ordinary_tokens_is_refused() -> None:
    with pytest.raises(WarmStartError, match="no ordinary tokens"):
        copy_batch(torch.Generator(), InductionConfig(), vocab=10, first_token=9, sep=0)


class _StopError(Exception):
    """Stands for the interrupt: raised from ``on_step`` after a given step."""


def test_an_interrupted_copy_stage_resumes_to_the_same_weights(tmp_path: Path) -> None:
    config = InductionConfig(steps=5, batch_size=4, span=4)

    def fresh() -> torch.nn.Module:
        return build_policy(policy_config(48, SMALL), seed=2, patch_numerics=False)

    def stop_at_3(record: InductionStep) -> None:
        if record.step == 3:
            raise _StopError

    straight = fresh()
    expected = pretrain_induction(straight, 48, 4, 2, config)
    checkpoint = StageCheckpoint(tmp_path / "induction.pt", every=3)
    with pytest.raises(_StopError):
        pretrain_induction(fresh(), 48, 4, 2, config, stop_at_3, checkpoint=checkpoint)
    resumed = fresh()
    history = pretrain_induction(resumed, 48, 4, 2, config, checkpoint=checkpoint)
    assert [s.step for s in history] == list(range(5))
    assert [s.loss for s in history] == pytest.approx([s.loss for s in expected], rel=1e-5)
    for got, want in zip(resumed.parameters(), straight.parameters(), strict=True):
        assert torch.allclose(got, want, atol=1e-6)
