"""GPU benchmark of hybrid-numerics' Triton kernels (and fla's, when importable) on an H200-class GPU.

Workloads on the Qwen3.5 Gated DeltaNet head configurations (H_qk, HV) = (16, 32), (16, 64),
(8, 32), (2, 8) with K = V = 128, bf16 activations, FP32 state:

* ``forward``: chunk path over T tokens (``--T``, default 2k, 8k, 32k), final state kept;
* ``forward_backward``: forward plus backward of a random projection of output and state
  (``backend="auto"``: on CUDA the Triton chunk path with its Triton state-scan backward;
  ``torch_forward_backward`` is the same on the vectorised torch path, the pre-Triton-backward
  training route, for comparison);
* ``decode``: one token for ``--decode-batch`` sequences on an FP32 state cache, in place.

Reported per case: median milliseconds (CUDA events), achieved TB/s under a byte model (every
input read once, every output written once; decode also reads and writes the FP32 state) and
TFLOP/s under the chunk-form FLOP model in :func:`chunk_flops`; ``decode_hbm_fraction`` is TB/s
over ``--hbm-tbps`` (H200: 4.8). State error: RMS-relative error of the final state against the
float64 oracle at ``--accuracy-T`` for ours and for fla (same bf16-rounded inputs).

Targets: decode at >= 80 % of HBM bandwidth at large batch; chunk forward no slower
than fla with >= 10x lower state error.

Without CUDA this prints one JSON object saying it was skipped and why (also under ``--smoke``).
Prints one JSON object as the last stdout line.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from typing import Any

import torch
from torch.nn import functional

from hybrid_numerics import (
    Backend,
    chunk_gated_delta_rule,
    fused_recurrent_gated_delta_rule,
    reference_gated_delta_rule,
)

HEAD_CONFIGS = ((16, 32), (16, 64), (8, 32), (2, 8))
CHUNK = 64


def skip(reason: str) -> None:
    print(json.dumps({"benchmark": "gdn_gpu", "skipped": True, "reason": reason}))


def load_fla() -> tuple[Callable[..., Any] | None, Callable[..., Any] | None, str | None]:
    try:
        from fla.ops.gated_delta_rule import (  # type: ignore[import-not-found]
            chunk_gated_delta_rule as fla_chunk,
        )
        from fla.ops.gated_delta_rule import (
            fused_recurrent_gated_delta_rule as fla_recurrent,
        )
    except Exception as exc:  # not installed, or broken: report, do not fail
        return None, None, f"{type(exc).__name__}: {exc}"
    return fla_chunk, fla_recurrent, None


def make_inputs(b: int, t: int, h: int, hv: int, d: int, seed: int) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator(device="cuda").manual_seed(seed)
    bf16 = torch.bfloat16

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen, device="cuda")

    q, k = randn(b, t, h, d).to(bf16), randn(b, t, h, d).to(bf16)
    v = randn(b, t, hv, d).to(bf16)
    g = functional.logsigmoid(randn(b, t, hv))  # FP32 gate, as the patched layer passes it
    beta = torch.rand(b, t, hv, generator=gen, device="cuda").to(bf16)
    h0 = randn(b, hv, d, d) * 0.1
    return q, k, v, g, beta, h0


def cuda_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def chunk_flops(b: int, t: int, hv: int, d: int) -> float:
    """FLOPs of the chunk form per (sequence, value head, chunk of C): K K^T, Q K^T, the UT
    inverse (C^3/3), u and w (C^2 V, C^2 K), the two state products (2 C K V), the intra-chunk
    output (C^2 V) and the state read (C K V); 2 FLOPs per multiply-add."""
    c = CHUNK
    macs = 3 * c * c * d + 2 * c * c * d + c**3 / 3 + 3 * c * d * d
    return 2.0 * macs * b * hv * (t // c)


def io_bytes(x: tuple[torch.Tensor, ...]) -> float:
    """Inputs read once, output written once, FP32 initial state read and final state written."""
    q, k, v, g, beta, h0 = x
    total = sum(t.numel() * t.element_size() for t in (q, k, v, g, beta))
    total += v.numel() * v.element_size()  # the output
    total += h0.numel() * 4 * 2  # initial state read + final state written (FP32)
    return float(total)


def ours_chunk(
    x: tuple[torch.Tensor, ...], backend: Backend = "auto"
) -> tuple[torch.Tensor, torch.Tensor | None]:
    q, k, v, g, beta, h0 = x
    return chunk_gated_delta_rule(
        q, k, v, g, beta, initial_state=h0, output_final_state=True, use_qk_l2norm=True,
        backend=backend,
    )  # fmt: skip


def fla_call(fn: Callable[..., Any], x: tuple[torch.Tensor, ...]) -> Any:
    q, k, v, g, beta, h0 = x
    return fn(
        q, k, v, g, beta, initial_state=h0, output_final_state=True, use_qk_l2norm_in_kernel=True
    )


def fwd_bwd(
    run: Callable[[tuple[torch.Tensor, ...]], Any], x: tuple[torch.Tensor, ...]
) -> Callable[[], None]:
    leaves = tuple(t.detach().clone().requires_grad_() for t in x)
    do = torch.randn_like(x[2], dtype=torch.float32)
    ds = torch.randn_like(x[5])

    def step() -> None:
        o, s = run(leaves)
        torch.autograd.grad((o.float() * do).sum() + (s * ds).sum(), leaves)

    return step


def state_errors(h: int, hv: int, t: int, fla_chunk: Callable[..., Any] | None) -> dict[str, float]:
    x = make_inputs(1, t, h, hv, 128, seed=3)
    _, ref = reference_gated_delta_rule(
        *x[:5], initial_state=x[5], output_final_state=True, use_qk_l2norm=True
    )
    assert ref is not None

    def rel(s: torch.Tensor) -> float:
        return float((s.double() - ref).norm() / ref.norm())

    with torch.no_grad():
        out = {"ours_state_rel_err": rel(ours_chunk(x)[1])}  # type: ignore[arg-type]
        if fla_chunk is not None:
            out["fla_state_rel_err"] = rel(fla_call(fla_chunk, x)[1])
    return out


def bench_config(args: argparse.Namespace, h: int, hv: int, fla: tuple[Any, Any]) -> dict[str, Any]:
    fla_chunk, fla_recurrent = fla
    d = 128
    rows: dict[str, Any] = {}
    for t in args.T:
        x = make_inputs(1, t, h, hv, d, seed=t)
        row: dict[str, Any] = {}
        with torch.no_grad():
            row["ours_forward_ms"] = cuda_ms(lambda x=x: ours_chunk(x), args.repeats)
            if fla_chunk is not None:
                row["fla_forward_ms"] = cuda_ms(lambda x=x: fla_call(fla_chunk, x), args.repeats)
        row["ours_forward_backward_ms"] = cuda_ms(fwd_bwd(ours_chunk, x), args.repeats)
        row["ours_torch_forward_backward_ms"] = cuda_ms(
            fwd_bwd(lambda y: ours_chunk(y, "torch"), x), args.repeats
        )
        if fla_chunk is not None:
            row["fla_forward_backward_ms"] = cuda_ms(
                fwd_bwd(lambda y: fla_call(fla_chunk, y), x), args.repeats
            )
        flops, nbytes = chunk_flops(1, t, hv, d), io_bytes(x)
        for key in [k for k in row if k.endswith("forward_ms")]:
            row[key.replace("_ms", "_tflops")] = flops / (row[key] * 1e-3) / 1e12
            row[key.replace("_ms", "_tbps")] = nbytes / (row[key] * 1e-3) / 1e12
        rows[f"T={t}"] = row
    rows["decode"] = bench_decode(args, h, hv, fla_recurrent)
    rows["accuracy"] = state_errors(h, hv, args.accuracy_T, fla_chunk)
    return rows


def bench_decode(args: argparse.Namespace, h: int, hv: int, fla_recurrent: Any) -> dict[str, Any]:
    b, d = args.decode_batch, 128
    q, k, v, g, beta, _ = make_inputs(b, 1, h, hv, d, seed=5)
    cache = torch.zeros(b, hv, d, d, device="cuda")
    slots = torch.arange(b, device="cuda")
    state_bytes = 2 * cache.numel() * 4  # read + write of the FP32 state dominates decode
    out: dict[str, Any] = {"batch": b}
    with torch.no_grad():
        ms = cuda_ms(lambda: fused_recurrent_gated_delta_rule(
            q, k, v, g, beta, state_cache=cache, state_indices=slots, use_qk_l2norm=True), args.repeats)  # fmt: skip
        out["ours_ms"], out["ours_tbps"] = ms, state_bytes / (ms * 1e-3) / 1e12
        out["ours_hbm_fraction"] = out["ours_tbps"] / args.hbm_tbps
        if fla_recurrent is not None:
            ms = cuda_ms(lambda: fla_recurrent(
                q, k, v, g, beta, initial_state=cache, output_final_state=True,
                use_qk_l2norm_in_kernel=True), args.repeats)  # fmt: skip
            out["fla_ms"], out["fla_tbps"] = ms, state_bytes / (ms * 1e-3) / 1e12
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (still needs CUDA)")
    parser.add_argument("--T", type=int, nargs="+", default=[2048, 8192, 32768])
    parser.add_argument("--heads", default=",".join(f"{h}:{hv}" for h, hv in HEAD_CONFIGS))
    parser.add_argument("--decode-batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--accuracy-T", type=int, default=2048)
    parser.add_argument(
        "--hbm-tbps", type=float, default=4.8, help="peak HBM bandwidth (H200: 4.8)"
    )
    args = parser.parse_args()
    if not torch.cuda.is_available():
        skip(
            "no CUDA device: the Triton kernels are exercised on CPU by the test suite under TRITON_INTERPRET=1"
        )
        return
    if args.smoke:
        args.T, args.heads, args.decode_batch, args.repeats, args.accuracy_T = (
            [256],
            "2:8",
            8,
            2,
            128,
        )
    fla_chunk, fla_recurrent, fla_problem = load_fla()
    results: dict[str, Any] = {}
    for spec in args.heads.split(","):
        h, hv = (int(n) for n in spec.split(":"))
        results[f"H={h},HV={hv}"] = bench_config(args, h, hv, (fla_chunk, fla_recurrent))
        print(f"H={h} HV={hv}: {json.dumps(results[f'H={h},HV={hv}'])}")
    print(json.dumps({
        "benchmark": "gdn_gpu",
        "skipped": False,
        "device": torch.cuda.get_device_name(),
        "fla": "available" if fla_problem is None else f"not importable ({fla_problem})",
        "results": results,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
