"""Benchmark hybrid-numerics' CPU path against the transformers torch fallback (same shapes).

Three workloads on Qwen3.5 head dims (K = V = 128) with grouped value heads:

* ``forward``: chunk path, T tokens, output + final state (prefill / trainer scoring);
* ``forward_backward``: the same plus backward of a random projection of output and state
  (trainer step), gradients for q, k, v, g, beta and the initial state;
* ``decode``: one token for a batch of sequences from an FP32 state (engine step), the state
  passed as ``initial_state`` and returned as a new tensor by both;
* ``decode_cache``: the same step as the engine makes it: ours updates an FP32 pool's slots in
  place (``state_cache``/``state_indices``), transformers (which has no cache argument) takes
  the state as ``initial_state`` and returns the new one, as its Qwen3.5 layer does.

and the same three at the shape the Arctic-SWE app trains and decodes its tiny policy at
(``app_*`` rows; ``--app-shape``, default ``B=8, T=800, H=2, HV=4, K=V=32``), with the fused
FP32 gate (``A_log``, ``dt_bias``; gradients reach both) as the app's patched layers call it.
The transformers side computes the same gate in FP32 first, as its Qwen3.5 layer does.

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


def make_app_inputs(b: int, t: int, h: int, hv: int, d: int, seed: int) -> Tensors:
    """Like :func:`make_inputs` with the raw gate input ``a`` in place of ``g``, then ``A_log``
    (log of U(1, 16), as Qwen3.5 initialises it) and ``dt_bias``."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(b, t, h, d, generator=gen)
    k = torch.randn(b, t, h, d, generator=gen)
    v = torch.randn(b, t, hv, d, generator=gen)
    a = torch.randn(b, t, hv, generator=gen)
    beta = torch.rand(b, t, hv, generator=gen)
    h0 = torch.randn(b, hv, d, d, generator=gen) * 0.1
    a_log = torch.log(torch.empty(hv).uniform_(1.0, 16.0, generator=gen))
    dt_bias = torch.rand(hv, generator=gen)
    return q, k, v, a, beta, h0, a_log, dt_bias


def make_inputs(b: int, t: int, h: int, hv: int, d: int, seed: int) -> Tensors:
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(b, t, h, d, generator=gen)
    k = torch.randn(b, t, h, d, generator=gen)
    v = torch.randn(b, t, hv, d, generator=gen)
    g = functional.logsigmoid(torch.randn(b, t, hv, generator=gen))
    beta = torch.rand(b, t, hv, generator=gen)
    h0 = torch.randn(b, hv, d, d, generator=gen) * 0.1
    return q, k, v, g, beta, h0


def seconds(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall-clock and this thread's CPU time of one call, in seconds."""
    wall, cpu = time.perf_counter(), time.thread_time()
    fn()
    return time.perf_counter() - wall, time.thread_time() - cpu


def paired(
    ours_fn: Callable[[], object],
    theirs_fn: Callable[[], object],
    repeats: int,
    inner: int = 1,
) -> dict[str, Any]:
    """Alternate ours / theirs ``repeats`` times after a warm-up of each. On a shared machine the
    load changes within seconds; the median of per-pair ratios compares runs that saw the same
    load, which the ratio of two separate medians does not. ``inner`` calls per sample (for
    sub-millisecond steps); the times reported are per call. Besides wall-clock time, each
    sample records the thread's CPU time (``time.thread_time``), which leaves out the time the
    process waited for a core on a loaded machine (it still includes cache misses caused by the
    other processes): ``speedup_cpu`` is the median per-pair ratio of those."""

    def many(fn: Callable[[], object]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(inner):
                fn()

        return run

    ours_fn, theirs_fn = many(ours_fn), many(theirs_fn)
    ours_fn()
    theirs_fn()
    pairs = [(seconds(ours_fn), seconds(theirs_fn)) for _ in range(repeats)]
    wall = [theirs[0] / mine[0] for mine, theirs in pairs]
    cpu = [theirs[1] / mine[1] for mine, theirs in pairs]

    def ms(values: Any) -> float:
        return round(statistics.median(values) * 1e3 / inner, 3)

    return {
        "ours_ms": ms(mine[0] for mine, _ in pairs),
        "transformers_ms": ms(theirs[0] for _, theirs in pairs),
        "speedup": round(statistics.median(wall), 3),
        "speedup_range": [round(min(wall), 3), round(max(wall), 3)],
        "ours_cpu_ms": ms(mine[1] for mine, _ in pairs),
        "transformers_cpu_ms": ms(theirs[1] for _, theirs in pairs),
        "speedup_cpu": round(statistics.median(cpu), 3),
        "speedup_cpu_range": [round(min(cpu), 3), round(max(cpu), 3)],
    }


def ours_cached(x: Tensors) -> Callable[[], None]:
    """Our decode step as an engine calls it: the states live in an FP32 pool (consecutive
    slots) that every call updates in place; no final state is returned."""
    q, k, v, g, beta, h0 = x
    pool = h0.clone()
    slots = torch.arange(h0.shape[0])

    def step() -> None:
        with torch.no_grad():
            fused_recurrent_gated_delta_rule(
                q, k, v, g, beta, state_cache=pool, state_indices=slots, use_qk_l2norm=True,
                backend="torch",
            )  # fmt: skip

    return step


def cached_decode_inputs(x: Tensors) -> Tensors:
    """The decode inputs with the decay scaled by 1e-3: the pooled state is updated in place by
    every call, and with ``g = logsigmoid(N(0, 1))`` a few hundred calls would decay it into
    FP32 denormals (slow arithmetic), which a real engine, whose state is refreshed by new
    tokens, does not see. Both sides get these inputs."""
    q, k, v, g, beta, h0 = x
    return q, k, v, g * 1e-3, beta, h0


def ours(kind: str) -> Callable[..., tuple[torch.Tensor, torch.Tensor | None]]:
    fn = chunk_gated_delta_rule if kind == "chunk" else fused_recurrent_gated_delta_rule

    def run(*x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        q, k, v, g, beta, h0, *gate = x  # gate: (A_log, dt_bias) for the app rows; g is then `a`
        a_log, dt_bias = gate if gate else (None, None)
        return fn(
            q,
            k,
            v,
            g,
            beta,
            initial_state=h0,
            output_final_state=True,
            use_qk_l2norm=True,
            use_gate_in_kernel=a_log is not None,
            A_log=a_log,
            dt_bias=dt_bias,
            backend="torch",
        )

    return run


def theirs(kind: str) -> Callable[..., tuple[torch.Tensor, torch.Tensor | None]]:
    from transformers.models.qwen3_5 import modeling_qwen3_5 as hf

    fn = hf.torch_chunk_gated_delta_rule if kind == "chunk" else hf.torch_recurrent_gated_delta_rule

    def run(*x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        q, k, v, g, beta, h0, *gate = x
        if gate:  # what transformers' Qwen3.5 layer computes before calling the kernel
            a_log, dt_bias = gate
            g = -a_log.float().exp() * functional.softplus(g.float() + dt_bias)
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
    parser.add_argument("--dim", type=int, default=128, help="K = V head dim of the main rows")
    parser.add_argument("--no-app", action="store_true", help="skip the app_* rows")
    parser.add_argument(
        "--decode-inner", type=int, default=10, help="decode calls per sample (decode rows)"
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--accuracy-T", type=int, default=1024, help="T for the float64 comparison")
    parser.add_argument(
        "--app-shape",
        default="8,800,2,4,32",
        help="B,T,H_qk,HV,K (=V) of the app_* rows: the Arctic-SWE tiny policy's GDN layers",
    )
    args = parser.parse_args()
    if args.smoke:
        args.T, args.heads, args.decode_batch, args.repeats, args.accuracy_T = 128, "1,2", 4, 1, 64
        args.decode_inner = 1
        args.app_shape = "2,64,2,4,32"
    torch.set_num_threads(args.threads)
    h, hv = (int(x) for x in args.heads.split(","))
    d = 32 if args.smoke else args.dim
    ab, at, ah, ahv, ad = (int(x) for x in args.app_shape.split(","))
    results: dict[str, Any] = {}
    chunk_inputs = make_inputs(1, args.T, h, hv, d, seed=0)
    decode_inputs = make_inputs(args.decode_batch, 1, h, hv, d, seed=2)
    cached_inputs = cached_decode_inputs(decode_inputs)
    app_inputs = make_app_inputs(ab, at, ah, ahv, ad, seed=3)
    app_decode = make_app_inputs(ab, 1, ah, ahv, ad, seed=4)
    workloads: list[tuple[str, str, Tensors, Callable[..., Callable[[], None]], int]] = [
        ("forward", "chunk", chunk_inputs, forward_step, 1),
        ("forward_backward", "chunk", chunk_inputs, forward_backward_step, 1),
        ("decode", "recurrent", decode_inputs, forward_step, args.decode_inner),
        ("decode_cache", "recurrent", cached_inputs, forward_step, args.decode_inner),
        ("app_forward", "chunk", app_inputs, forward_step, 1),
        ("app_forward_backward", "chunk", app_inputs, forward_backward_step, 1),
        ("app_decode", "recurrent", app_decode, forward_step, 50),
    ]
    if args.no_app:
        workloads = [w for w in workloads if not w[0].startswith("app_")]
    load_before = os.getloadavg()
    for name, kind, x, make_step, inner in workloads:
        mine = ours_cached(x) if name == "decode_cache" else make_step(ours(kind), x)
        row = paired(mine, make_step(theirs(kind), x), args.repeats, inner)
        results[name] = row
        print(
            f"{name:21s} ours {row['ours_ms']:9.3f} ms   transformers {row['transformers_ms']:9.3f} ms"
            f"   x{row['speedup']:.2f} ({row['speedup_range'][0]:.2f}-{row['speedup_range'][1]:.2f})"
            f"   cpu x{row['speedup_cpu']:.2f}"
        )
    results["accuracy_vs_float64"] = accuracy(args.accuracy_T, h, hv, d)
    summary = {
        "benchmark": "gdn_cpu",
        "smoke": args.smoke,
        "shape": {"T": args.T, "H": h, "HV": hv, "K": d, "V": d, "decode_batch": args.decode_batch},
        "app_shape": {"B": ab, "T": at, "H": ah, "HV": ahv, "K": ad, "V": ad, "fused_gate": True},
        "threads": args.threads,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "machine": f"{platform.machine()} {os.cpu_count()} cpu, torch {torch.__version__}",
        **results,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
