"""The named sampling streams of a policy evaluation (Arctic-SWE §3.1's measured pool curve).

Torch-free, so command-line parsers can name the choices without loading an engine. A run's
in-run pool evaluations sample the ``pool`` streams of its seed, its held-out evaluations the
``heldout`` streams, and ``arctic-swe evaluate`` defaults to ``check``: an "independent" check
of a run's final weights never redraws the random numbers the run's own evaluation drew.
"""

from __future__ import annotations

import hashlib

#: The named sampling streams of an evaluation (see the module docstring).
POOL_STREAM = "pool"
HELDOUT_STREAM = "heldout"
CHECK_STREAM = "check"
STREAMS = (POOL_STREAM, HELDOUT_STREAM, CHECK_STREAM)


def stream_seed(seed: int, stream: str) -> int:
    """The base seed of ``stream``'s rollouts under evaluation seed ``seed``: ``seed`` itself for
    ``pool`` (the streams every in-run pool evaluation has drawn since they exist), a hash of
    (seed, name) for the others. Raises ``ValueError`` for an unknown stream."""
    if stream not in STREAMS:
        raise ValueError(f"unknown stream {stream!r}; choose from {', '.join(STREAMS)}")
    if stream == POOL_STREAM:
        return seed
    digest = hashlib.blake2b(f"{seed}:stream:{stream}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1
