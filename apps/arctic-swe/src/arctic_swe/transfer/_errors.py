"""Typed failures of the weight-transfer channel (Arctic-SWE §3.3)."""


class TransferProtocolError(ValueError):
    """A payload or a set of weights that does not follow vLLM's NCCL weight-transfer protocol.

    Raised for malformed init/update payloads, for a rendezvous mode this engine does not
    speak, and when the tensors a trainer is about to send disagree with the metadata it
    declared (the message names the first divergent parameter).
    """


class TransferTimeoutError(TimeoutError):
    """A rendezvous or a broadcast did not complete within the group's timeout.

    The group is unusable afterwards: close it and join again.
    """


class TransferConnectionError(ConnectionError):
    """The transfer group failed for a reason other than a timeout (peer gone, socket error)."""
