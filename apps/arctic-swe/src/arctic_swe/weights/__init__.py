"""Published weights: the on-disk format every engine loads, its one atomic writer, its one
validating reader, tied-alias handling, and the atomic-replace helpers every state file of a
run is written with (Arctic-SWE §3.3). Layer 0: imports only torch, safetensors and the
standard library."""

from arctic_swe.weights._atomic import (
    LATEST,
    atomic_file,
    atomic_write_text,
    prune_steps,
    read_latest,
    replace_dir,
    staged_dir,
    write_latest,
)
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
    "LATEST",
    "MANIFEST_FILE",
    "WEIGHTS_FILE",
    "Manifest",
    "Spec",
    "TensorEntry",
    "WeightsError",
    "atomic_file",
    "atomic_write_text",
    "check_spec",
    "file_digest",
    "header_of",
    "manifest_of",
    "owned_weights",
    "prune",
    "prune_steps",
    "publish",
    "published_dir",
    "read_latest",
    "read_manifest",
    "read_weights",
    "replace_dir",
    "run_weights",
    "staged_dir",
    "tied_aliases",
    "tied_spec",
    "weight_spec",
    "weights_file",
    "write_latest",
    "write_safetensors",
]
