"""Gradient accuracy of hybrid-numerics' chunk paths vs float64 autograd through the oracle.

Prints one JSON object: per case, the RMS-relative error of ``dq, dk, dv, dg, dbeta, dh0`` of
``<o, do> + <final, ds>`` (cotangents from ``torch.Generator().manual_seed(1)``) for the fused
Triton chunk path (``backend="triton"``; on CPU it runs under ``TRITON_INTERPRET=1``, set here
before the kernels are imported) and the FP32 torch path. bf16 cases: the oracle runs on the
same bf16-rounded inputs and cotangent. Run from the workspace root::

    nice -n 10 python benchmarks/gdn_grad_accuracy.py           # ~1-2 min on a loaded CPU
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from hybrid_numerics import chunk_gated_delta_rule, reference_gated_delta_rule

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
NAMES = ("dq", "dk", "dv", "dg", "dbeta", "dh0")
# name: (B, T, H, HV, K, V, sequence lengths or None, strong decay, input dtype)
CASES: dict[str, tuple[Any, ...]] = {
    "dense B=2 T=130 H=2 HV=4 K=32 V=16": (2, 130, 2, 4, 32, 16, None, False, torch.float32),
    "packed 1/63/64/100 HV=2 K=V=32": (
        1,
        228,
        1,
        2,
        32,
        32,
        [1, 63, 64, 100],
        False,
        torch.float32,
    ),
    "strong decay (g x 20) T=130 K=V=32": (1, 130, 1, 2, 32, 32, None, True, torch.float32),
    "bf16 inputs T=130 K=V=32": (1, 130, 1, 2, 32, 32, None, False, torch.bfloat16),
}


def rel(a: torch.Tensor, e: torch.Tensor) -> float:
    a, e = a.detach().cpu().double(), e.detach().cpu().double()
    return float((a - e).norm() / e.norm())


def grads(x: dict[str, torch.Tensor], cu: torch.Tensor | None, dtype: torch.dtype,
          backend: str | None) -> tuple[torch.Tensor, ...]:  # fmt: skip
    device = DEVICE if backend == "triton" else "cpu"
    state = torch.float64 if backend is None else torch.float32
    leaves = [x[n].to(device, dtype).requires_grad_() for n in ("q", "k", "v", "g", "beta")]
    if backend is None:  # the oracle on the (rounded) inputs, in float64
        leaves = [t.detach().double().requires_grad_() for t in leaves]
    h0 = x["h0"].to(device, state).requires_grad_()
    fn = reference_gated_delta_rule if backend is None else chunk_gated_delta_rule
    kw: dict[str, Any] = {} if backend is None else {"backend": backend}
    o, s = fn(*leaves, initial_state=h0, output_final_state=True, use_qk_l2norm=True,
              cu_seqlens=None if cu is None else cu.to(device), **kw)  # fmt: skip
    assert s is not None
    gen = torch.Generator().manual_seed(1)
    do = torch.randn(o.shape, generator=gen, dtype=torch.float64).to(dtype).to(device, o.dtype)
    ds = torch.randn(s.shape, generator=gen, dtype=torch.float64).to(device, s.dtype)
    return torch.autograd.grad((o * do).sum() + (s * ds).sum(), [*leaves, h0])


def main() -> None:
    torch.set_num_threads(1)
    out: dict[str, Any] = {"device": DEVICE, "interpreter": os.environ.get("TRITON_INTERPRET")}
    out["load_before"] = os.getloadavg()
    start = time.perf_counter()
    for name, (b, t, h, hv, kd, vd, seqs, strong, dtype) in CASES.items():
        gen = torch.Generator().manual_seed(t + kd)

        def randn(*shape: int, gen: torch.Generator = gen) -> torch.Tensor:
            return torch.randn(*shape, generator=gen, dtype=torch.float64)

        x = {"q": randn(b, t, h, kd), "k": randn(b, t, h, kd), "v": randn(b, t, hv, vd)}
        x["g"] = torch.nn.functional.logsigmoid(randn(b, t, hv)) * (20.0 if strong else 1.0)
        x["beta"] = torch.rand(b, t, hv, generator=gen, dtype=torch.float64)
        x["h0"] = randn(b if seqs is None else len(seqs), hv, kd, vd)
        cu = None
        if seqs is not None:
            cu = torch.tensor([0, *torch.tensor(seqs).cumsum(0).tolist()], dtype=torch.int32)
        want = grads(x, cu, dtype, None)
        row: dict[str, Any] = {}
        for backend in ("triton", "torch"):
            got = grads(x, cu, dtype, backend)
            row[backend] = {
                n: float(f"{rel(a, e):.2e}") for n, a, e in zip(NAMES, got, want, strict=True)
            }
        out[name] = row
    out["seconds"] = round(time.perf_counter() - start, 1)
    out["load_after"] = os.getloadavg()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
