"""The trainer: recompute log-probs with the engine's numerics, CISPO + IcePop, AdamW.

Arctic-SWE §3.3-§5: the trainer scores the rollout tokens with the same model code the engine
samples with (hybrid-numerics kernels, FP32 recurrent state, the chunked LM-head log-probs of
cispo-loss), so the importance weight ω measures only the real rollout-trainer mismatch. The
objective is CISPO with IcePop masking on ``[0, 2]``, token mean over the *global* batch (the
normaliser counts every micro-batch of the step), no KL, no entropy bonus, no length term;
AdamW with β2 = 0.98 at a constant learning rate, gradient clipping.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from arctic_swe.config import TrainerSection
from arctic_swe.trainer._errors import BatchError
from arctic_swe.trainer._samples import PaddedBatch, TrainSample, pad_batch
from arctic_swe.weights import owned_weights
from cispo_loss import (
    LossConfig,
    LossOutput,
    cispo_loss,
    default_normalizer,
    quantiles,
    token_logprobs,
)

#: Figures of :meth:`Trainer.step` averaged over the step's trainable tokens.
TOKEN_MEANS = ("mismatch_kl", "masked_frac", "entropy_mean", "masked_frac_low", "masked_frac_high")

#: ω quantiles of a step: (name, level), over every trainable token of every micro-batch.
OMEGA_QUANTILES = (("p1", 0.01), ("p5", 0.05), ("p50", 0.5), ("p95", 0.95), ("p99", 0.99))


def omega_stats(omegas: Sequence[torch.Tensor]) -> dict[str, float]:
    """ω = π_train/π_rollout of the step's trainable tokens (one ``[n]`` tensor per micro-batch)
    -> ``{"p1", "p5", "p50", "p95", "p99", "min", "max"}`` (linear-interpolation quantiles over
    all of them at once, cispo-loss's definition); ``{}`` when no token is trainable."""
    values = torch.cat([o.reshape(-1).to(torch.float64) for o in omegas]) if omegas else None
    if values is None or values.numel() == 0:
        return {}
    levels = tuple(q for _, q in OMEGA_QUANTILES)
    named = {
        n: float(v) for (n, _), v in zip(OMEGA_QUANTILES, quantiles(values, levels), strict=True)
    }
    return {**named, "min": float(values.min()), "max": float(values.max())}


@dataclass(frozen=True)
class StepStats:
    """What one optimizer step did (all floats are finite on a healthy run)."""

    step: int  # optimizer steps taken so far, this one included
    loss: float
    grad_norm: float  # before clipping
    mismatch_kl: float  # mean(ω - log ω - 1) over trainable tokens
    masked_frac: float  # share of trainable tokens IcePop masked
    entropy: float  # mean next-token entropy over trainable tokens
    trainable_tokens: int
    rollouts: int
    seconds: float
    # ω over every trainable token of the step: omega_stats' keys ({} when none, or remote)
    omega: Mapping[str, float] = field(default_factory=dict)

    @property
    def tokens_per_second(self) -> float:
        return self.trainable_tokens / self.seconds if self.seconds > 0 else 0.0


def loss_config(section: TrainerSection) -> LossConfig:
    """The cispo-loss configuration a trainer section selects."""
    return LossConfig(
        ratio_control="ppo_clip" if section.ratio_control == "ppo_clip" else "mask",
        mask_low=0.0,
        mask_high=section.mask_high,
        aggregation="token_mean" if section.aggregation == "token_mean" else "rollout_mean",
    )


def autocast_for(device: torch.device) -> AbstractContextManager[Any]:
    """bf16 autocast on CUDA (the FP32 master names stay FP32 through hybrid-numerics' kernels);
    nothing on CPU, where the whole forward is FP32."""
    if device.type == "cuda":
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return nullcontext()


def score_tokens(
    model: nn.Module, input_ids: torch.Tensor, targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs and entropies ``[B, T-1]`` of ``targets`` under ``model`` (a Qwen3.5 causal
    LM), through cispo-loss's chunked LM-head path (no ``[B, T, V]`` logits tensor).

    Shared by the in-process :class:`Trainer` and the FSDP2 trainer process, so both score
    tokens with exactly the engine's numerics (Arctic-SWE §3.3)."""
    core: Any = model.get_submodule("model")
    hidden = core(input_ids=input_ids, use_cache=False).last_hidden_state
    head = model.get_output_embeddings().weight  # type: ignore[operator]
    hidden = hidden[:, :-1].to(head.dtype)
    result = token_logprobs(hidden, head, targets)
    return result.logprobs, result.entropy


def micro_batch_loss(
    logprobs: torch.Tensor,
    entropy: torch.Tensor,
    batch: PaddedBatch,
    config: LossConfig,
    normalizer: float,
) -> LossOutput:
    """CISPO + IcePop on one micro-batch, divided by the step's *global* ``normalizer``
    (trainable tokens, or rollouts, of every micro-batch on every rank; Arctic-SWE §5)."""
    return cispo_loss(
        logprobs.float(),
        batch.rollout_logprobs,
        batch.advantages,
        batch.loss_mask,
        config=config,
        normalizer=normalizer,
        entropy=entropy.float(),
        metrics="basic",  # ω's quantiles come from omega_stats over the whole step instead
    )


def micro_batches(samples: Sequence[TrainSample], size: int) -> Iterator[Sequence[TrainSample]]:
    """``samples`` in consecutive chunks of at most ``size`` rollouts."""
    for start in range(0, len(samples), size):
        yield samples[start : start + size]


class Trainer:
    """Owns the training copy of the policy and its AdamW state.

    ``model`` is a Qwen3.5 causal LM (``arctic_swe.model.build_policy``/``load_policy``); it is
    trained in place. On CUDA the forward runs under bf16 autocast with the FP32 parameters
    kept by the hybrid-numerics precision policy; on CPU everything is FP32.
    """

    def __init__(self, model: nn.Module, section: TrainerSection) -> None:
        self.model = model
        self.section = section
        self.loss_config = loss_config(section)
        self.device = next(model.parameters()).device
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0])  # type: ignore[operator]
        self.optimizer = torch.optim.AdamW(
            model.parameters(),
            lr=section.lr,
            betas=(section.beta1, section.beta2),
            weight_decay=section.weight_decay,
        )
        self.steps = 0

    # ------------------------------------------------------------------ public API
    def step(self, samples: Sequence[TrainSample]) -> StepStats:
        """One optimizer step on ``samples`` (the whole global batch), in micro-batches of
        ``micro_batch_rollouts`` whose gradients accumulate under one global normaliser."""
        if not samples:
            raise BatchError("a step needs at least one sample")
        started = time.perf_counter()
        batches = [
            pad_batch(chunk, self.vocab_size, self.device) for chunk in self._chunks(samples)
        ]
        normalizer = sum(default_normalizer(b.loss_mask, config=self.loss_config) for b in batches)
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        totals: dict[str, float] = dict.fromkeys(TOKEN_MEANS, 0.0)
        loss_sum, tokens = 0.0, 0
        omegas: list[torch.Tensor] = []
        for batch in batches:
            metrics = self._accumulate(batch, max(normalizer, 1), omegas)
            count = int(metrics["trainable_tokens"])
            tokens += count
            loss_sum += metrics["loss"]
            for key in TOKEN_MEANS:
                totals[key] += metrics.get(key, 0.0) * count
        grad_norm = float(nn.utils.clip_grad_norm_(self.model.parameters(), self.section.grad_clip))
        if not (self.section.skip_empty_steps and all(s.advantage == 0.0 for s in samples)):
            self.optimizer.step()
        self.model.eval()
        self.steps += 1
        mean = {k: v / tokens if tokens else 0.0 for k, v in totals.items()}
        return StepStats(
            step=self.steps,
            loss=loss_sum,
            grad_norm=grad_norm,
            mismatch_kl=mean["mismatch_kl"],
            masked_frac=mean["masked_frac"],
            entropy=mean["entropy_mean"],
            trainable_tokens=tokens,
            rollouts=len(samples),
            seconds=time.perf_counter() - started,
            omega=omega_stats(omegas),
        )

    @torch.no_grad()
    def recompute_logprobs(self, sample: TrainSample) -> torch.Tensor:
        """Trainer log-probs ``[T-1]`` of tokens ``1..T-1`` of ``sample`` (FP32, no grad)."""
        batch = pad_batch([sample], self.vocab_size, self.device)
        with self._autocast():
            logprobs, _ = self._logprobs(batch)
        return logprobs[0].float()

    def weights(self) -> dict[str, torch.Tensor]:
        """A CPU copy of the current weights for an engine refresh (each keeps its dtype).

        Tied aliases are left out (``lm_head.weight`` under tied embeddings), as
        ``save_pretrained`` writes them: a served engine's weight set has no alias, and the
        in-process engine accepts either.
        """
        return owned_weights(self.model)

    def state_dict(self) -> dict[str, Any]:
        """Optimizer state and step count (the model is saved as safetensors separately)."""
        return {"optimizer": self.optimizer.state_dict(), "steps": self.steps}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.steps = int(state["steps"])

    # ------------------------------------------------------------------ internals
    def _chunks(self, samples: Sequence[TrainSample]) -> Iterator[Sequence[TrainSample]]:
        return micro_batches(samples, self.section.micro_batch_rollouts)

    def _autocast(self) -> AbstractContextManager[Any]:
        return autocast_for(self.device)

    def _logprobs(self, batch: PaddedBatch) -> tuple[torch.Tensor, torch.Tensor]:
        return score_tokens(self.model, batch.input_ids, batch.targets)

    def _accumulate(
        self, batch: PaddedBatch, normalizer: int, omegas: list[torch.Tensor]
    ) -> dict[str, float]:
        """Forward + backward of one micro-batch; appends its trainable tokens' ω to
        ``omegas`` (the quantiles are taken over the whole step, not per micro-batch)."""
        with self._autocast():
            logprobs, entropy = self._logprobs(batch)
        log_ratio = logprobs.detach().double() - batch.rollout_logprobs.double()
        omegas.append(log_ratio[batch.loss_mask].exp())
        output = micro_batch_loss(logprobs, entropy, batch, self.loss_config, normalizer)
        loss: Any = output.loss  # torch's backward is untyped
        loss.backward()
        return dict(output.metrics)
