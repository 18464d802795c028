"""The Wilson score interval of a sampled success rate (``arctic-swe evaluate``, the measured
pool success of ``arctic-swe overfit`` and its summary); stdlib only, so the metrics readers
need no torch."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (95 % for ``z = 1.96``).

    Unlike the normal approximation it stays inside [0, 1] and is sensible at 0 or ``n``
    successes, which small pools hit often. ``n = 0`` gives the uninformative ``(0, 1)``.
    """
    if n < 0 or not 0 <= successes <= max(n, 0):
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # At 0 or n successes the bound is exactly 0 or 1; say so rather than trust the rounding.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


class SolvedShare:
    """The success rate of a record that counts ``solved`` of ``rollouts`` (an in-run
    evaluation, ``arctic-swe evaluate``'s result): one definition of both properties."""

    # Declared for the type checker only: a dataclass subclass holds them as fields, another
    # computes them as properties, and a property here would become a dataclass's default.
    if TYPE_CHECKING:

        @property
        def solved(self) -> int: ...

        @property
        def rollouts(self) -> int: ...

    @property
    def rate(self) -> float:
        """Share of rollouts solved under the gated reward (0.0 when nothing was sampled)."""
        return self.solved / self.rollouts if self.rollouts else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        """Wilson 95 % interval of :attr:`rate`, every rollout counted as independent."""
        return wilson_interval(self.solved, self.rollouts)
