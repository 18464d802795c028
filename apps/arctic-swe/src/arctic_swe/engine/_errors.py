"""Typed errors of the torch engine."""

from __future__ import annotations


class EngineError(RuntimeError):
    """Base class of every error the torch engine raises."""


class RequestError(EngineError, ValueError):
    """A generate request is malformed (empty prompt, token outside the vocabulary, prompt past
    the context limit, bad stop tokens or seed); nothing was run for it."""


class RefreshError(EngineError, ValueError):
    """A refresh was refused (non-increasing version, weights that do not fit); the engine keeps
    its previous weights, version and caches."""


class EngineClosedError(EngineError):
    """The engine was closed; it accepts no more work."""


class EngineStepFailedError(EngineError):
    """A step of the engine raised; every request in flight at that moment fails with this
    error and the engine refuses further work (the router marks it down)."""


class EngineUnavailableError(EngineError):
    """A remote engine did not answer (connection refused or reset, server error, timeout)
    within the client's bounded retries; the router marks it down and its leases are
    re-leased elsewhere."""


class EngineProtocolError(EngineError):
    """A remote engine answered with something that is not the engine protocol (a response
    without token ids, log-probs or weight-version spans, or spans that do not cover the
    tokens)."""
