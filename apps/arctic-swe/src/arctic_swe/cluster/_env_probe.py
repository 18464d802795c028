"""The environment probe: run as ``<python> -c <this file's source> <kind>`` by the launcher's
preflight, in the environment a role will run in (Arctic-SWE §3.3).

It imports only the standard library at the top, so it answers even from an environment
without ``arctic_swe``: its last stdout line is one JSON object, ``{"ok": true, "versions":
{...}}`` or ``{"ok": false, "problem": "...", "versions": {...}}``. Kinds:

* ``vllm`` — ``import vllm`` works (the launcher checks the version is 0.33.x);
* ``engine`` — ``import arctic_swe`` works and ``torch``, ``transformers`` and
  ``hybrid_numerics`` are installed (what ``arctic-swe serve`` needs; not imported: cheap);
* ``trainer`` — ``arctic_swe`` imports, and hybrid-numerics' Qwen3.5 patch applies to this
  environment's ``transformers``: a two-layer random ``Qwen3_5ForCausalLM`` is built and
  every Gated DeltaNet layer gets patched (the layout checks of ``patch_qwen3_5`` refuse a
  ``transformers`` whose layer they do not know), and ``torchrun``'s module imports.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import platform
import sys
from typing import Any

_DISTRIBUTIONS = ("arctic-swe", "hybrid-numerics", "torch", "transformers", "vllm")


def _versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in _DISTRIBUTIONS:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def _vllm() -> None:
    vllm = importlib.import_module("vllm")  # only there in the engines' environment
    if not getattr(vllm, "__version__", ""):
        raise ImportError("vllm imports but has no __version__")


def _engine() -> None:
    importlib.import_module("arctic_swe")

    missing = [
        name
        for name in ("torch", "transformers", "hybrid_numerics")
        if importlib.util.find_spec(name) is None
    ]
    if missing:
        raise ImportError(f"arctic_swe imports but {', '.join(missing)} is not installed")


def _trainer() -> None:
    importlib.import_module("arctic_swe")  # first: the most telling failure
    import torch.distributed.run  # noqa: F401  (torchrun)
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

    import hybrid_numerics

    config = Qwen3_5TextConfig(
        vocab_size=16, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        layer_types=["linear_attention", "full_attention"], num_attention_heads=2,
        num_key_value_heads=1, head_dim=8, linear_num_key_heads=1, linear_num_value_heads=1,
        linear_key_head_dim=8, linear_value_head_dim=8,
    )  # fmt: skip
    model: Any = Qwen3_5ForCausalLM(config)
    hybrid_numerics.patch_qwen3_5(model)
    if not hybrid_numerics.is_patched(model):
        raise RuntimeError("hybrid_numerics.patch_qwen3_5 left a Gated DeltaNet layer unpatched")


_PROBES = {"vllm": _vllm, "engine": _engine, "trainer": _trainer}


def main(kind: str) -> dict[str, Any]:
    """Run the ``kind`` probe; the report (never raises)."""
    try:
        _PROBES[kind]()
    except Exception as exc:  # any failure is the answer, as one line
        problem = f"{type(exc).__name__}: {exc}".splitlines()[0]
        return {"ok": False, "problem": problem, "versions": _versions()}
    return {"ok": True, "versions": _versions()}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])), flush=True)
