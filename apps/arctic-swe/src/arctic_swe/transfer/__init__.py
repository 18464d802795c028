"""Weight transfer from the trainer into engines over vLLM's NCCL weight-transfer protocol
(Arctic-SWE §3.3), carried by torch.distributed gloo on CPU."""

from arctic_swe.transfer._errors import (
    TransferConnectionError,
    TransferProtocolError,
    TransferTimeoutError,
)
from arctic_swe.transfer._gloo import Communicator, GlooCommunicator, host_store, open_gloo_group
from arctic_swe.transfer._payloads import (
    DEFAULT_BUFFER_SIZE_BYTES,
    DEFAULT_NUM_BUFFERS,
    NcclInitInfo,
    UpdateInfo,
    dtype_name,
    resolve_dtype,
)
from arctic_swe.transfer._receiver import EngineReceiver
from arctic_swe.transfer._sender import (
    LocalWeightSender,
    PortPicker,
    Weights,
    WeightSender,
    base_port,
    free_ports,
)
from arctic_swe.transfer._vllm_sender import VllmNcclSender, VllmUnavailableError
from arctic_swe.transfer._wire import check_against, receive_weights, send_weights

__all__ = [
    "DEFAULT_BUFFER_SIZE_BYTES",
    "DEFAULT_NUM_BUFFERS",
    "Communicator",
    "EngineReceiver",
    "GlooCommunicator",
    "LocalWeightSender",
    "NcclInitInfo",
    "PortPicker",
    "TransferConnectionError",
    "TransferProtocolError",
    "TransferTimeoutError",
    "UpdateInfo",
    "VllmNcclSender",
    "VllmUnavailableError",
    "WeightSender",
    "Weights",
    "base_port",
    "check_against",
    "dtype_name",
    "free_ports",
    "host_store",
    "open_gloo_group",
    "receive_weights",
    "resolve_dtype",
    "send_weights",
]
