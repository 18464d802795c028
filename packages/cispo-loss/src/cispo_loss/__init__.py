"""The CISPO objective with IcePop masking, memory-bounded log-probs and mismatch metrics.

Arctic-SWE §5, the recipe's objective: group-centred advantages, the importance
weight as a detached coefficient (CISPO), tokens whose weight leaves ``[0, 2.0]`` masked (IcePop),
token mean over the whole batch with a global normaliser, and log-probs computed from hidden
states in tiles so long trajectories never materialise ``TxV`` logits.
"""

from cispo_loss._advantages import group_advantages, length_penalty, shape_rewards
from cispo_loss._config import LengthPenalty, LossConfig, RewardShaping
from cispo_loss._errors import CispoError, ConfigError, InputError
from cispo_loss._logprobs import TokenLogprobs, token_logprobs
from cispo_loss._loss import LossOutput, cispo_loss, default_normalizer
from cispo_loss._loss_metrics import LossMetrics, MetricsLevel
from cispo_loss._metrics import quantiles
from cispo_loss._version import __version__

__all__ = [
    "CispoError",
    "ConfigError",
    "InputError",
    "LengthPenalty",
    "LossConfig",
    "LossMetrics",
    "LossOutput",
    "MetricsLevel",
    "RewardShaping",
    "TokenLogprobs",
    "__version__",
    "cispo_loss",
    "default_normalizer",
    "group_advantages",
    "length_penalty",
    "quantiles",
    "shape_rewards",
    "token_logprobs",
]
