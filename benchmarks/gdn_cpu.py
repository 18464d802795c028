"""Benchmark hybrid-numerics' CPU path against the transformers torch fallback (same shapes).

Three workloads on Qwen3.5 head dims (K = V = 128) with grouped value heads:

* ``forward``: chunk path, T tokens, output + final state (prefill / trainer scoring);
* ``forward_backward``: the same plus backward of a random projection of output and state
  (trainer step), gradients for q, k, v, g, beta and the initial state;
* ``decode``: one token for a batch of sequences from an FP32 state (engine step).

Ours and ``transformers.models.qwen3_5.modeling_qwen3_5.torch_{chunk,recurrent}_gated_delta_rule``
run alternately (``--repeats`` pairs after a warm-up) in the same process; reported are the
median times and the median of the per-pair ratios theirs / ours (> 1: we are faster), which
stays meaningful on a machine whose load changes between runs. The
accuracy of both is measured against the float64 oracle (``hybrid_numerics.reference``) at a
smaller T (the oracle is slow): RMS-relative error of output and final state.

Prints one JSON object as the last stdout line. ``--smoke`` runs tiny sizes in a few seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from torch.nn import functional

from hybrid_numerics import (
    chunk_gated_delta_rule,
    fused_recurrent_gated_delta_rule,
    reference_gated_delta_rule,
)

Tensors = tuple[torch.Tensor, ...]


def make_inputs(b: int, t: int, h: int, hv: int, d: int, seed: int) -> Tensors:
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(b, t, h, d, generator=gen)
    k = torch.randn(b, t, h, d, generator=gen)
    v = torch.randn(b, t, hv, d, generator=gen)
    g = functional.logsigmoid(torch.randn(b, t, hv, generator=gen))
    beta = torch.rand(b, t, hv, generator=gen)
    h0 = torch.randn(b, hv, d, d, generator=gen) * 0.1
    return q, k, v, g, beta, h0


def seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def paired(
    ours_fn: Callable[[], object], theirs_fn: Callable[[], object], repeats: int
) -> dict[str, float]:
    """Alternate ours / theirs ``repeats`` times after a warm-up of each. On a shared machine the
    load changes within seconds; the median of per-pair ratios compares runs that saw the same
    load, which the ratio of two separate medians does not."""
    ours_fn()
    theirs_fn()
    pairs = [(seconds(ours_fn), seconds(theirs_fn)) for _ in range(repeats)]
    return {
        "ours_ms": round(statistics.median(a for a, _ in pairs) * 1e3, 3),
        "transformers_ms": round(statistics.median(b for _, b in pairs) * 1e3, 3),
        "speedup": round(statistics.median(b / a for a, b in pairs), 3),
    }


def ours(kind: str) -> Callable[..., tuple[torch.Tensor, torch.Tensor | None]]:
    fn = chunk_gated_delta_rule if kind == "chunk" else fused_recurrent_gated_delta_rule

    def run(*x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        q, k, v, g, beta, h0 = x
        return fn(
            q,
            k,
            v,
            g,
            beta,
            initial_state=h0,
            output_final_state=True,
            use_qk_l2norm=True,
            backend="torch",
        )

    return run


def theirs(kind: str) -> Callable[..., tuple[torch.Tensor, torch.Tensor | None]]:
    from transformers.models.qwen3_5 import modeling_qwen3_5 as hf

    fn = hf.torch_chunk_gated_delta_rule if kind == "chunk" else hf.torch_recurrent_gated_delta_rule

    def run(*x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        q, k, v, g, beta, h0 = x
        out: tuple[torch.Tensor, torch.Tensor | None] = fn(
            q,
            k,
            v,
            g=g,
            beta=beta,
            initial_state=h0,
            output_final_state=True,
            use_qk_l2norm_in_kernel=True,
        )
        return out

    return run


def forward_step(impl: Callable[..., Any], x: Tensors) -> Callable[[], None]:
    def step() -> None:
        with torch.no_grad():
            impl(*x)

    return step


def forward_backward_step(impl: Callable[..., Any], x: Tensors) -> Callable[[], None]:
    leaves = [t.clone().requires_grad_() for t in x]
    gen = torch.Generator().manual_seed(7)
    do = torch.randn(x[2].shape, generator=gen)
    ds = torch.randn(x[5].shape, generator=gen)

    def step() -> None:
        o, s = impl(*leaves)
        torch.autograd.grad((o * do).sum() + (s * ds).sum(), leaves)

    return step


def rms_rel(a: torch.Tensor, e: torch.Tensor) -> float:
    a, e = a.detach().double(), e.detach().double()
    return float((a - e).norm() / e.norm())


def accuracy(t: int, h: int, hv: int, d: int) -> dict[str, float]:
    x = make_inputs(1, t, h, hv, d, seed=1)
    ro, rs = reference_gated_delta_rule(
        *x[:5], initial_state=x[5], output_final_state=True, use_qk_l2norm=True
    )
    assert rs is not None
    result = {}
    for name, impl in (("ours", ours("chunk")), ("transformers", theirs("chunk"))):
        o, s = impl(*x)
        assert s is not None
        result[f"{name}_output_rel_err"] = rms_rel(o, ro)
        result[f"{name}_state_rel_err"] = rms_rel(s, rs)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, a few seconds")
    parser.add_argument("--T", type=int, default=4096, help="tokens for forward / forward+backward")
    parser.add_argument("--heads", default="2,4", help="H_qk,HV (Qwen3.5-4B per-GPU shard: 16,32)")
    parser.add_argument("--decode-batch", type=int, default=64, help="sequences per decode step")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--accuracy-T", type=int, default=1024, help="T for the float64 comparison")
    args = parser.parse_args()
    if args.smoke:
        args.T, args.heads, args.decode_batch, args.repeats, args.accuracy_T = 128, "1,2", 4, 1, 64
    torch.set_num_threads(args.threads)
    h, hv = (int(x) for x in args.heads.split(","))
    d = 32 if args.smoke else 128
    results: dict[str, Any] = {}
    chunk_inputs = make_inputs(1, args.T, h, hv, d, seed=0)
    decode_inputs = make_inputs(args.decode_batch, 1, h, hv, d, seed=2)
    workloads: list[tuple[str, str, Tensors, Callable[..., Callable[[], None]]]] = [
        ("forward", "chunk", chunk_inputs, forward_step),
        ("forward_backward", "chunk", chunk_inputs, forward_backward_step),
        ("decode", "recurrent", decode_inputs, forward_step),
    ]
    for name, kind, x, make_step in workloads:
        row = paired(make_step(ours(kind), x), make_step(theirs(kind), x), args.repeats)
        results[name] = row
        print(
            f"{name:17s} ours {row['ours_ms']:9.2f} ms   transformers {row['transformers_ms']:9.2f} ms   x{row['speedup']:.2f}"
        )
    results["accuracy_vs_float64"] = accuracy(args.accuracy_T, h, hv, d)
    summary = {
        "benchmark": "gdn_cpu",
        "smoke": args.smoke,
        "shape": {"T": args.T, "H": h, "HV": hv, "K": d, "V": d, "decode_batch": args.decode_batch},
        "threads": args.threads,
        "machine": f"{platform.machine()} {os.cpu_count()} cpu, torch {torch.__version__}",
        **results,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
