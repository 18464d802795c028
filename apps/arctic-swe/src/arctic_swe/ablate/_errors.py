"""The one typed error of ``arctic-swe ablate``'s planning (bad variants, a used ``--out``)."""

from __future__ import annotations


class AblateError(ValueError):
    """The ablation cannot start (or continue): an unknown or repeated variant, variants that
    resolve to the same configuration, an ``--out`` directory that holds something else."""
