"""Published weights: the on-disk format every engine loads, its one atomic writer, its one
validating reader, and tied-alias handling (Arctic-SWE §3.3); written with the atomic helpers of
``arctic_swe._atomic``. Layer 0: imports only torch, safetensors, the standard library and
that module."""

from arctic_swe.weights._format import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST_FILE,
    WEIGHTS_FILE,
    Manifest,
    TensorEntry,
    file_digest,
    manifest_of,
    prune,
    publish,
    published_dir,
    run_weights,
    weights_file,
    write_safetensors,
)
from arctic_swe.weights._header import DTYPES, WeightsError, header_of
from arctic_swe.weights._read import check_spec, read_manifest, read_weights
from arctic_swe.weights._tied import Spec, owned_weights, tied_aliases, tied_spec, weight_spec

__all__ = [
    "DTYPES",
    "FORMAT",
    "FORMAT_VERSION",
    "MANIFEST_FILE",
    "WEIGHTS_FILE",
    "Manifest",
    "Spec",
    "TensorEntry",
    "WeightsError",
    "check_spec",
    "file_digest",
    "header_of",
    "manifest_of",
    "owned_weights",
    "prune",
    "publish",
    "published_dir",
    "read_manifest",
    "read_weights",
    "run_weights",
    "tied_aliases",
    "tied_spec",
    "weight_spec",
    "weights_file",
    "write_safetensors",
]
