"""Accuracy of every hybrid-numerics path against the float64 oracle (the README's table).

Cases (``B = 1``, ``H = 1``, ``HV = 2``, ``K = V = --dim``; q, k, v, initial state ~ N(0, 1),
``g = logsigmoid(N(0, 1))``, ``beta ~ U(0, 1)``, ``use_qk_l2norm=True``): dense ``T`` from
``--T``, a packed batch of ragged lengths (``cu_seqlens``, no padding), strong decay (``g``
x 20) and bf16 inputs (the oracle then gets the same bf16-rounded values). Paths: the fused
Triton chunk forward (``triton_chunk``), the Triton decode kernel (``triton_recurrent``), the
torch chunk path and, when importable, transformers' torch fallback. Metric: RMS-relative error
``||x - x_ref|| / ||x_ref||`` of the output and the final state.

Without CUDA the Triton kernels run under ``TRITON_INTERPRET=1`` (set here, before they are
imported). Prints one JSON object as the last line; ``--smoke`` runs tiny shapes in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from typing import Any

import torch


def rel(a: torch.Tensor, e: torch.Tensor) -> float:
    a, e = a.detach().double().cpu(), e.detach().double().cpu()
    return float((a - e).norm() / e.norm())


def make_case(t: int, d: int, seqs: list[int] | None, strong: bool, seed: int) -> dict[str, Any]:
    gen = torch.Generator().manual_seed(seed)
    n = 1 if seqs is None else len(seqs)
    f64 = torch.float64
    x = {
        "q": torch.randn(1, t, 1, d, generator=gen, dtype=f64),
        "k": torch.randn(1, t, 1, d, generator=gen, dtype=f64),
        "v": torch.randn(1, t, 2, d, generator=gen, dtype=f64),
        "g": torch.nn.functional.logsigmoid(torch.randn(1, t, 2, generator=gen, dtype=f64)),
        "beta": torch.rand(1, t, 2, generator=gen, dtype=f64),
        "initial_state": torch.randn(n, 2, d, d, generator=gen, dtype=f64),
    }
    if strong:
        x["g"] = x["g"] * 20.0
    cu = None
    if seqs is not None:
        offsets = [0]
        for length in seqs:
            offsets.append(offsets[-1] + length)
        cu = torch.tensor(offsets, dtype=torch.int32)
    return {"x": x, "cu": cu}


def paths(device: str) -> dict[str, Callable[..., Any]]:
    from hybrid_numerics import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule

    def on(
        x: dict[str, torch.Tensor], cu: torch.Tensor | None, dtype: torch.dtype
    ) -> dict[str, Any]:
        moved = {
            n: t.to(device, dtype if n != "initial_state" else torch.float32) for n, t in x.items()
        }
        return {**moved, "cu_seqlens": None if cu is None else cu.to(device)}

    def ours(fn: Callable[..., Any], backend: str) -> Callable[..., Any]:
        def run(x: dict[str, torch.Tensor], cu: torch.Tensor | None, dtype: torch.dtype) -> Any:
            with torch.no_grad():
                return fn(
                    **on(x, cu, dtype), output_final_state=True, use_qk_l2norm=True, backend=backend
                )

        return run

    out = {
        "triton_chunk": ours(chunk_gated_delta_rule, "triton"),
        "triton_recurrent": ours(fused_recurrent_gated_delta_rule, "triton"),
        "torch_chunk": ours(chunk_gated_delta_rule, "torch"),
    }
    try:
        from transformers.models.qwen3_5.modeling_qwen3_5 import torch_chunk_gated_delta_rule
    except Exception:  # the optional extra is not installed
        return out

    def transformers(
        x: dict[str, torch.Tensor], cu: torch.Tensor | None, dtype: torch.dtype
    ) -> Any:
        if cu is not None:
            raise ValueError("no cu_seqlens in the fallback")
        y = {n: t.to(dtype if n != "initial_state" else torch.float32) for n, t in x.items()}
        with torch.no_grad():
            return torch_chunk_gated_delta_rule(
                y["q"], y["k"], y["v"], g=y["g"], beta=y["beta"], initial_state=y["initial_state"],
                output_final_state=True, use_qk_l2norm_in_kernel=True,
            )  # fmt: skip

    out["transformers"] = transformers
    return out


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--smoke", action="store_true", help="tiny shapes, seconds")
    p.add_argument("--T", type=int, nargs="+", default=[64, 200, 1000], help="dense lengths")
    p.add_argument("--dim", type=int, default=64, help="K = V")
    args = p.parse_args()
    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.set_num_threads(1)
    from hybrid_numerics import reference_gated_delta_rule

    if args.smoke:
        args.T, args.dim = [70], 16
    d = args.dim
    cases = {f"dense T={t}": (t, None, False, torch.float32) for t in args.T}
    ragged = [1, 63, 64, 100] if not args.smoke else [1, 40, 29]
    cases["packed ragged " + "/".join(map(str, ragged))] = (
        sum(ragged),
        ragged,
        False,
        torch.float32,
    )
    cases[f"strong decay T={args.T[-1]}"] = (args.T[-1], None, True, torch.float32)
    cases[f"bf16 inputs T={args.T[-1]}"] = (args.T[-1], None, False, torch.bfloat16)
    impls = paths(device)
    table: dict[str, dict[str, Any]] = {}
    for name, (t, seqs, strong, dtype) in cases.items():
        case = make_case(t, d, seqs, strong, seed=t)
        x = case["x"]
        if dtype != torch.float32:  # the oracle sees the rounded inputs
            x = {n: (v.to(dtype).double() if n != "initial_state" else v) for n, v in x.items()}
        ref_o, ref_s = reference_gated_delta_rule(
            **x, output_final_state=True, cu_seqlens=case["cu"], use_qk_l2norm=True
        )
        assert ref_s is not None
        row: dict[str, Any] = {}
        for impl, run in impls.items():
            try:
                o, s = run(x, case["cu"], dtype)
                row[impl] = {"output": rel(o, ref_o), "state": rel(s, ref_s)}
            except Exception as exc:  # e.g. the fallback has no packed input
                row[impl] = {"error": f"{type(exc).__name__}: {exc}"}
        table[name] = row
        print(name, json.dumps(row), flush=True)
    print(json.dumps({"benchmark": "gdn_accuracy", "smoke": args.smoke, "device": device, "K": d, "V": d,
                      "interpret": os.environ.get("TRITON_INTERPRET") == "1", "cases": table}))  # fmt: skip


if __name__ == "__main__":
    main()
