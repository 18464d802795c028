"""Keep named parameters FP32 inside a bf16 model (Arctic-SWE §3.3: ``A_log``, gate, norms).

``A_log`` is the log of a per-head decay rate: ``exp(A_log)`` multiplies every token's decay, and
bf16 keeps 8 bits of mantissa, so a bf16 ``A_log`` perturbs the decay by up to ~0.4 % per step,
compounded over the whole context. Optimizer updates of ~1e-5 relative vanish entirely in bf16.
The policy keeps such parameters FP32 in the module itself, so the forward reads FP32, AdamW
updates FP32 (the optimizer state follows the parameter dtype) and ``state_dict()`` exports FP32
for weight transfer to the engines.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

import torch
from torch import nn

from hybrid_numerics._errors import PatchError

#: Defaults: the GDN decay parameters and every RMSNorm weight (``*norm.weight`` also matches
#: ``input_layernorm``, ``post_attention_layernorm``, ``q_norm``, ``k_norm`` and the final norm).
DEFAULT_FP32_PATTERNS = ("*A_log", "*dt_bias", "*norm.weight")


@dataclass(frozen=True)
class PrecisionPolicy:
    """Which parameters stay FP32 and what everything else becomes.

    * ``fp32_patterns``: ``fnmatch`` patterns over full parameter names (``model.named_parameters()``).
    * ``compute_dtype``: dtype of all other floating parameters and buffers (bf16 by default;
      ``None`` leaves them as they are).
    """

    fp32_patterns: tuple[str, ...] = DEFAULT_FP32_PATTERNS
    compute_dtype: torch.dtype | None = torch.bfloat16

    def keeps_fp32(self, name: str) -> bool:
        """Whether the parameter called ``name`` must be FP32 under this policy."""
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.fp32_patterns)


def apply_precision_policy(model: nn.Module, policy: PrecisionPolicy | None = None) -> list[str]:
    """Cast ``model`` in place: matching parameters to FP32, the rest to ``policy.compute_dtype``.

    Apply it to a model loaded in FP32 (``torch_dtype=torch.float32``): casting an already-bf16
    ``A_log`` back to FP32 cannot restore the lost digits. Re-apply after any ``model.to(dtype)``.
    Returns the names kept in FP32 (raises :class:`PatchError` if a pattern matched nothing,
    which is nearly always a typo).
    """
    policy = policy or PrecisionPolicy()
    kept = [name for name, _ in model.named_parameters() if policy.keeps_fp32(name)]
    for pattern in policy.fp32_patterns:
        if not any(fnmatch.fnmatchcase(name, pattern) for name in kept):
            raise PatchError(f"precision pattern {pattern!r} matches no parameter of the model")
    params = dict(model.named_parameters())
    # Keep exact FP32 copies before the cast: bf16 -> FP32 afterwards could not restore them.
    originals = {name: params[name].detach().float().clone() for name in kept}
    if policy.compute_dtype is not None:
        model.to(policy.compute_dtype)
    with torch.no_grad():
        for name, value in originals.items():
            # Re-point .data (not a new Parameter): optimizers holding the parameter stay valid.
            params[name].data = value
    return kept


def precision_violations(model: nn.Module, policy: PrecisionPolicy | None = None) -> list[str]:
    """Names of parameters (or state-dict entries) that should be FP32 but are not - for a check
    after an optimizer step, a weight load or a weight transfer."""
    policy = policy or PrecisionPolicy()
    return [
        f"{name}: {tensor.dtype}"
        for name, tensor in model.state_dict().items()
        if policy.keeps_fp32(name) and tensor.dtype != torch.float32
    ]
