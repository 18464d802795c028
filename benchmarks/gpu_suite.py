"""GPU suite of hybrid-numerics' Triton kernels, sized for one short H200 window (< 5 min).

Run it through ``benchmarks/gpu_suite.sh`` (image python3, ``PYTHONPATH`` to the packages'
``src/``, the carried ``fla-core`` wheel if present, ``PYTHONUNBUFFERED=1``). Every measurement
is its own JSON row, printed and flushed at once and wrapped in ``try``/``except`` (an error
becomes an ``"error"`` row and the suite goes on), so a window that closes early keeps every
finished row. Rows:

* ``forward`` / ``forward_backward``: chunk path, ``H = 16`` q/k heads, ``HV = 32, 64`` value
  heads, ``K = V = 128``, ``T = 8k, 32k`` (one sequence), bf16 q/k/v/beta, FP32 gate and
  state; ours (``backend="triton"``) and fla / FlashQLA when importable (keyword calls only:
  fla's positional order differs between its functions). Each with ``ms`` (``do_bench``),
  ``max_memory_allocated`` and the final state's RMS-relative error vs the float64 oracle on
  the same bf16 inputs;
* ``decode``: one token for 256 and 4,096 sequences from an FP32 state cache, timed with
  ``triton.testing.do_bench`` over many calls; TB/s under the state read + write byte model.

TF32 is off for the whole process. Rows run cheapest first; rows not started within
``--budget-s`` (270 s) are printed as skipped, so the summary always arrives. ``--smoke`` runs
tiny shapes in seconds; without CUDA it
runs the kernels under ``TRITON_INTERPRET=1`` on CPU (the CI dry run). The last stdout line is
one JSON summary object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch


def emit(row: dict[str, Any]) -> None:
    print(json.dumps(row), flush=True)


def disable_tf32() -> str:
    """TF32 off for the whole process (fla's and our torch glue then multiply in IEEE FP32);
    the new flag API where the image's torch has it (>= 2.9), the legacy flags otherwise."""
    try:
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        torch.backends.cudnn.conv.fp32_precision = "ieee"
        return "fp32_precision=ieee"
    except AttributeError:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        return "allow_tf32=False"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--smoke", action="store_true", help="tiny shapes (CPU: Triton interpreter)")
    p.add_argument("--T", type=int, nargs="+", default=[8192, 32768], help="sequence lengths")
    p.add_argument("--hv", type=int, nargs="+", default=[32, 64], help="value heads (H = 16)")
    p.add_argument("--decode-batch", type=int, nargs="+", default=[256, 4096])
    p.add_argument("--rep-ms", type=int, default=200, help="do_bench repetition time per row")
    p.add_argument("--no-backward", action="store_true", help="skip forward_backward rows")
    p.add_argument("--no-accuracy", action="store_true", help="skip the float64 state errors")
    p.add_argument(
        "--budget-s",
        type=float,
        default=270.0,
        help="wall-clock budget: rows not started by then are printed as skipped (default 270 s, "
        "so a 5-minute window still gets the summary line)",
    )
    return p.parse_args()


def load_peers() -> dict[str, Callable[..., Any]]:
    """fla / FlashQLA chunk and recurrent functions, when importable (keyword calls only)."""
    peers: dict[str, Callable[..., Any]] = {}
    try:
        from fla.ops.gated_delta_rule import (
            chunk_gated_delta_rule,
            fused_recurrent_gated_delta_rule,
        )

        peers["fla_chunk"], peers["fla_recurrent"] = (
            chunk_gated_delta_rule,
            fused_recurrent_gated_delta_rule,
        )
    except Exception as exc:  # not carried, or broken: a row says so
        emit(
            {
                "row": "peer",
                "name": "fla",
                "available": False,
                "reason": f"{type(exc).__name__}: {exc}",
            }
        )
    try:
        import flash_qla  # type: ignore[import-not-found]

        peers["flashqla_chunk"] = flash_qla.chunk_gated_delta_rule
    except Exception as exc:
        emit(
            {
                "row": "peer",
                "name": "flashqla",
                "available": False,
                "reason": f"{type(exc).__name__}: {exc}",
            }
        )
    return peers


class Suite:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.cuda = torch.cuda.is_available()
        self.device = "cuda" if self.cuda else "cpu"
        self.rows = 0
        self.errors = 0
        self.skipped = 0
        self.started = time.perf_counter()

    def inputs(self, b: int, t: int, h: int, hv: int, d: int, seed: int) -> dict[str, torch.Tensor]:
        gen = torch.Generator(device=self.device).manual_seed(seed)
        dt = torch.bfloat16 if self.cuda else torch.float32  # the interpreter has no bf16 dots

        def randn(*shape: int) -> torch.Tensor:
            return torch.randn(*shape, generator=gen, device=self.device)

        return {
            "q": randn(b, t, h, d).to(dt),
            "k": randn(b, t, h, d).to(dt),
            "v": randn(b, t, hv, d).to(dt),
            "g": torch.nn.functional.logsigmoid(randn(b, t, hv)),
            "beta": torch.rand(b, t, hv, generator=gen, device=self.device).to(dt),
            "initial_state": randn(b, hv, d, d) * 0.1,
        }

    def time_ms(self, fn: Callable[[], object]) -> float:
        if self.cuda:
            from triton.testing import do_bench

            return float(do_bench(fn, warmup=25, rep=self.args.rep_ms))
        fn()  # interpreter: one warm call, one timed (meaningless as a speed; proves it runs)
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e3

    def measure(self, row: dict[str, Any], fn: Callable[[], dict[str, Any]]) -> None:
        """Run one measurement; print its row (or its error) at once."""
        self.rows += 1
        if time.perf_counter() - self.started > self.args.budget_s:
            self.skipped += 1
            emit({**row, "skipped": f"over the {self.args.budget_s:.0f} s budget"})
            return
        try:
            if self.cuda:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            row.update(fn())
            if self.cuda:
                row["max_memory_allocated_gib"] = torch.cuda.max_memory_allocated() / 2**30
        except Exception as exc:
            self.errors += 1
            row["error"] = f"{type(exc).__name__}: {exc}"
            row["trace"] = traceback.format_exc(limit=3)[-600:]
        emit(row)
        if self.cuda:
            torch.cuda.empty_cache()


class Float64State:
    """The oracle's final state for one input set, computed once (on first use) and shared by
    every implementation's row: token by token in float64, a few seconds at T = 32k on a GPU."""

    def __init__(self, x: dict[str, torch.Tensor]) -> None:
        self.x = x
        self.ref: torch.Tensor | None = None

    def error(self, final: torch.Tensor) -> float:
        if self.ref is None:
            from hybrid_numerics import reference_gated_delta_rule

            x = self.x
            _, self.ref = reference_gated_delta_rule(
                x["q"], x["k"], x["v"], x["g"], x["beta"], initial_state=x["initial_state"],
                output_final_state=True, use_qk_l2norm=True,
            )  # fmt: skip
        assert self.ref is not None
        return float((final.double() - self.ref).norm() / self.ref.norm())


def chunk_callers(peers: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    from hybrid_numerics import chunk_gated_delta_rule

    def ours(x: dict[str, torch.Tensor]) -> Any:
        return chunk_gated_delta_rule(
            **x, output_final_state=True, use_qk_l2norm=True, backend="triton"
        )

    callers: dict[str, Callable[..., Any]] = {"ours": ours}
    for name in ("fla_chunk", "flashqla_chunk"):
        if name in peers:
            fn = peers[name]
            callers[name.removesuffix("_chunk")] = lambda x, fn=fn: fn(
                **x, output_final_state=True, use_qk_l2norm_in_kernel=True
            )
    return callers


def chunk_rows(suite: Suite, peers: dict[str, Callable[..., Any]], h: int, hv: int, t: int) -> None:
    d = suite.args.dim
    x = suite.inputs(1, t, h, hv, d, seed=t + hv)
    oracle = Float64State(x)
    for name, call in chunk_callers(peers).items():
        base = {"row": "forward", "impl": name, "H": h, "HV": hv, "T": t, "K": d, "V": d}

        def forward(call: Callable[..., Any] = call) -> dict[str, Any]:
            with torch.no_grad():
                out: dict[str, Any] = {"ms": suite.time_ms(lambda: call(x))}
                if not suite.args.no_accuracy:
                    out["state_rel_err_vs_f64"] = oracle.error(call(x)[1])
            return out

        suite.measure(dict(base), forward)
        if suite.args.no_backward:
            continue

        def forward_backward(call: Callable[..., Any] = call) -> dict[str, Any]:
            leaves = {n: t_.detach().clone().requires_grad_() for n, t_ in x.items()}
            do = torch.randn(x["v"].shape, device=suite.device)
            ds = torch.randn(x["initial_state"].shape, device=suite.device)

            def step() -> None:
                o, s = call(leaves)
                torch.autograd.grad((o.float() * do).sum() + (s * ds).sum(), list(leaves.values()))

            return {"ms": suite.time_ms(step)}

        suite.measure(dict(base, row="forward_backward"), forward_backward)


def decode_rows(
    suite: Suite, peers: dict[str, Callable[..., Any]], h: int, hv: int, n: int
) -> None:
    from hybrid_numerics import fused_recurrent_gated_delta_rule

    d = suite.args.dim
    x = suite.inputs(n, 1, h, hv, d, seed=n + hv)
    x.pop("initial_state")
    cache = torch.zeros(n, hv, d, d, device=suite.device)
    slots = torch.arange(n, device=suite.device)
    state_bytes = 2 * cache.numel() * 4  # FP32 state read + written: what decode is bound by
    calls: dict[str, Callable[[], object]] = {
        "ours": lambda: fused_recurrent_gated_delta_rule(
            **x, state_cache=cache, state_indices=slots, use_qk_l2norm=True, backend="triton"
        )
    }
    if "fla_recurrent" in peers:
        fla = peers["fla_recurrent"]
        calls["fla"] = lambda: fla(
            **x, initial_state=cache, output_final_state=True, use_qk_l2norm_in_kernel=True
        )
    for name, call in calls.items():

        def run(call: Callable[[], object] = call) -> dict[str, Any]:
            with torch.no_grad():
                ms = suite.time_ms(call)
            return {"ms": ms, "state_tbps": state_bytes / (ms * 1e-3) / 1e12}

        suite.measure(
            {"row": "decode", "impl": name, "H": h, "HV": hv, "sequences": n, "K": d, "V": d}, run
        )


def main() -> None:
    args = parse_args()
    cuda = torch.cuda.is_available()
    if not cuda:
        if not args.smoke:
            emit(
                {
                    "benchmark": "gpu_suite",
                    "skipped": True,
                    "reason": "no CUDA device (use --smoke for the CPU dry run)",
                }
            )
            return
        os.environ["TRITON_INTERPRET"] = "1"  # before hybrid_numerics' kernels are imported
    tf32 = disable_tf32()
    args.dim, h = 128, 16
    if args.smoke:
        args.dim, h, args.T, args.hv, args.decode_batch, args.rep_ms = 16, 1, [70], [2], [4], 20
    suite = Suite(args)
    started = time.perf_counter()
    emit({"row": "env", "device": torch.cuda.get_device_name() if cuda else "cpu (TRITON_INTERPRET=1)",
          "torch": torch.__version__, "python": sys.version.split()[0],
          "interpret": os.environ.get("TRITON_INTERPRET") == "1", "tf32": tf32})  # fmt: skip
    peers = load_peers()
    # Cheapest first (the shortest T and decode at every HV, then the longer T), so a window
    # that runs short loses the most expensive rows, never all rows of one head count.
    lengths = sorted(args.T)
    for hv in args.hv:
        chunk_rows(suite, peers, h, hv, lengths[0])
        for n in args.decode_batch:
            decode_rows(suite, peers, h, hv, n)
    for t in lengths[1:]:
        for hv in args.hv:
            chunk_rows(suite, peers, h, hv, t)
    emit({"benchmark": "gpu_suite", "skipped": False, "smoke": args.smoke, "rows": suite.rows,
          "errors": suite.errors, "skipped_over_budget": suite.skipped, "peers": sorted(peers), "seconds": time.perf_counter() - started})  # fmt: skip
    if args.smoke and suite.errors:  # the dry run is a check: a failing row fails it
        sys.exit(f"gpu_suite --smoke: {suite.errors} of {suite.rows} rows failed")


if __name__ == "__main__":
    main()
