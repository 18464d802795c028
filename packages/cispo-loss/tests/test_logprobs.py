"""token_logprobs against the full-logits reference: values, gradients, dtypes and memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cispo_loss import InputError, token_logprobs
from cispo_loss.reference import reference_token_logprobs

F64 = torch.float64


def make_inputs(
    seed: int, tokens: int, hidden: int, vocab: int, dtype: torch.dtype = F64, scale: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    h = (torch.randn(tokens, hidden, generator=gen, dtype=F64) * scale).to(dtype)
    w = torch.randn(vocab, hidden, generator=gen, dtype=F64).to(dtype)
    t = torch.randint(0, vocab, (tokens,), generator=gen)
    return h.requires_grad_(True), w.requires_grad_(True), t


shapes = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**31 - 1),
        "tokens": st.integers(1, 20),
        "hidden": st.integers(1, 6),
        "vocab": st.integers(1, 30),
        "chunk": st.integers(1, 9),
        "vocab_chunk": st.integers(1, 13),
        "temperature": st.sampled_from([0.6, 1.0, 1.7]),
    }
)


@given(shapes)
@settings(max_examples=40)
def test_values_and_gradients_match_reference(case: dict[str, int | float]) -> None:
    h, w, t = make_inputs(
        int(case["seed"]), int(case["tokens"]), int(case["hidden"]), int(case["vocab"]), scale=2.0
    )
    temperature = float(case["temperature"])
    lp, ent = token_logprobs(
        h,
        w,
        t,
        temperature=temperature,
        chunk_size=int(case["chunk"]),
        vocab_chunk_size=int(case["vocab_chunk"]),
    )
    ref_lp, ref_ent = reference_token_logprobs(h, w, t, temperature=temperature)
    torch.testing.assert_close(lp, ref_lp, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(ent, ref_ent, rtol=1e-12, atol=1e-12)
    gen = torch.Generator().manual_seed(1)
    a, b = (
        torch.randn(lp.shape, generator=gen, dtype=F64),
        torch.randn(lp.shape, generator=gen, dtype=F64),
    )
    got = torch.autograd.grad((lp * a).sum() + (ent * b).sum(), (h, w))
    want = torch.autograd.grad((ref_lp * a).sum() + (ref_ent * b).sum(), (h, w))
    for g, r in zip(got, want, strict=True):
        torch.testing.assert_close(g, r, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("use", ["both", "logprobs", "entropy"])
def test_gradcheck_float64(use: str) -> None:
    h, w, t = make_inputs(0, 7, 4, 11)

    def f(hidden: torch.Tensor, weight: torch.Tensor) -> tuple[torch.Tensor, ...]:
        lp, ent = token_logprobs(
            hidden, weight, t, temperature=0.8, chunk_size=3, vocab_chunk_size=4
        )
        return {"both": (lp, ent), "logprobs": (lp,), "entropy": (ent,)}[use]

    assert torch.autograd.gradcheck(f, (h, w))
    assert torch.autograd.gradgradcheck is not None  # first-order only: see README limitations


def test_batched_shape_and_frozen_head() -> None:
    h, w, t = make_inputs(4, 12, 5, 9)
    w.requires_grad_(False)
    lp, ent = token_logprobs(
        h.reshape(3, 4, 5), w, t.reshape(3, 4), chunk_size=5, vocab_chunk_size=4
    )
    assert lp.shape == ent.shape == (3, 4)
    ref_lp, _ = reference_token_logprobs(h, w, t)
    torch.testing.assert_close(lp.reshape(-1), ref_lp)
    (g,) = torch.autograd.grad(lp.sum(), (h,))
    (r,) = torch.autograd.grad(ref_lp.sum(), (h,))
    torch.testing.assert_close(g, r)


def test_no_grad_inference() -> None:
    h, w, t = make_inputs(5, 6, 3, 8)
    with torch.no_grad():
        lp, ent = token_logprobs(h, w, t)
    assert not lp.requires_grad
    assert not ent.requires_grad
    torch.testing.assert_close(lp, reference_token_logprobs(h, w, t)[0])


def test_float32_chunking_does_not_change_results() -> None:
    h, w, t = make_inputs(6, 64, 16, 300, dtype=torch.float32)
    one = token_logprobs(h, w, t, chunk_size=1, vocab_chunk_size=7)
    whole = token_logprobs(h, w, t, chunk_size=64, vocab_chunk_size=300)
    torch.testing.assert_close(one.logprobs, whole.logprobs, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(one.entropy, whole.entropy, rtol=1e-5, atol=1e-5)
    assert one.logprobs.dtype == torch.float32


def test_bf16_inputs_accumulate_in_float32() -> None:
    """Same bf16 logits as the engine; every reduction in float32, far better than bf16 ones."""
    h, w, t = make_inputs(7, 256, 64, 4096, dtype=torch.bfloat16, scale=0.5)
    lp, ent = token_logprobs(h, w, t, chunk_size=64, vocab_chunk_size=1000)
    assert lp.dtype == ent.dtype == torch.float32
    logits = (h @ w.T).to(F64)  # the bf16 matmul's own (rounded) logits, reduced exactly
    exact = torch.log_softmax(logits, dim=-1)
    exact_lp = exact.gather(1, t[:, None]).squeeze(1)
    exact_ent = -(exact.exp() * exact).sum(-1)
    assert (lp.double() - exact_lp).abs().max() < 1e-4
    assert (ent.double() - exact_ent).abs().max() < 1e-4
    bf16_lp = torch.log_softmax(h @ w.T, dim=-1).gather(1, t[:, None]).squeeze(1)
    assert (bf16_lp.double() - exact_lp).abs().max() > 10 * (lp.double() - exact_lp).abs().max()
    (g_h, g_w) = torch.autograd.grad(lp.sum() + ent.sum(), (h, w))
    assert g_h.dtype == g_w.dtype == torch.bfloat16
    (r_h, r_w) = torch.autograd.grad(
        (exact_lp.sum() + exact_ent.sum()), (h, w)
    )  # float64 path through the same bf16 matmul
    torch.testing.assert_close(g_h.double(), r_h.double(), rtol=0.02, atol=0.02)
    torch.testing.assert_close(g_w.double(), r_w.double(), rtol=0.02, atol=0.02)


def _largest_saved(fn: object) -> int:
    sizes: list[int] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        sizes.append(t.numel())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()  # type: ignore[operator]
    return max(sizes)


def test_nothing_of_size_tokens_times_vocab_is_saved_for_backward() -> None:
    tokens, hidden, vocab = 64, 8, 512
    h, w, t = make_inputs(8, tokens, hidden, vocab, dtype=torch.float32)
    chunked = _largest_saved(lambda: token_logprobs(h, w, t, chunk_size=16, vocab_chunk_size=128))
    naive = _largest_saved(lambda: reference_token_logprobs(h, w, t))
    assert chunked <= max(tokens * hidden, vocab * hidden)
    assert naive >= tokens * vocab  # the check can fail: the naive path does save T x V


_PEAK_SCRIPT = textwrap.dedent(
    """
    import json, resource, sys, torch
    from cispo_loss import token_logprobs
    from cispo_loss.reference import reference_token_logprobs
    torch.set_num_threads(1)
    mode, tokens, hidden, vocab = sys.argv[1], *map(int, sys.argv[2:5])
    g = torch.Generator().manual_seed(0)
    h = torch.randn(tokens, hidden, generator=g, requires_grad=True)
    w = torch.randn(vocab, hidden, generator=g, requires_grad=True)
    t = torch.randint(0, vocab, (tokens,), generator=g)
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize()
    def step(h, w, t):
        if mode == "naive":
            lp, ent = reference_token_logprobs(h, w, t)
        elif mode == "defaults":
            lp, ent = token_logprobs(h, w, t)
        else:
            lp, ent = token_logprobs(h, w, t, chunk_size=256, vocab_chunk_size=4096)
        (lp.sum() + ent.sum()).backward()
    small = torch.randn(8, hidden, requires_grad=True)
    step(small, torch.randn(64, hidden, requires_grad=True), torch.randint(0, 64, (8,)))
    before = rss()  # after a tiny warm-up: libraries and kernels already resident
    step(h, w, t)
    # VmHWM, not ru_maxrss: after fork+exec ru_maxrss still remembers the parent's RSS at fork
    with open("/proc/self/status") as f:
        peak = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:"))
    print(json.dumps({"extra": peak - before}))
    """
)


def _peak_extra(mode: str, tokens: int, hidden: int, vocab: int) -> int:
    # glibc otherwise keeps freed blocks below its adaptive (up to 32 MiB) mmap threshold in its
    # arenas; mmap-ing every block of 64 KiB or more makes RSS follow live memory.
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"}
    result = subprocess.run(
        [sys.executable, "-c", _PEAK_SCRIPT, mode, str(tokens), str(hidden), str(vocab)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    return int(json.loads(result.stdout.strip().splitlines()[-1])["extra"])


@pytest.mark.slow  # heavy (CI time); nox -s nightly runs it
def test_peak_memory_is_a_fraction_of_the_full_logits_path() -> None:
    """Fresh processes, peak RSS over the pre-call baseline (T=1024, V=16384: 64 MiB per T x V)."""
    naive = _peak_extra("naive", 1024, 32, 16384)
    chunked = _peak_extra("chunked", 1024, 32, 16384)
    assert naive > 4 * 1024 * 16384  # at least one float32 T x V tensor
    assert chunked < naive / 4, (chunked, naive)


@pytest.mark.slow
def test_long_trajectory_never_holds_tokens_times_vocab() -> None:
    """T = 32768, V = 65536: a float32 T x V would be 8 GiB; the chunked path stays under 0.5 GiB."""
    extra = _peak_extra("defaults", 32768, 8, 65536)
    assert extra < 512 * 2**20, extra


def _call(**overrides: object) -> None:
    args: dict[str, object] = {
        "hidden": torch.zeros(4, 3),
        "lm_head_weight": torch.zeros(5, 3),
        "targets": torch.tensor([0, 1, 2, 4]),
    }
    kwargs = {k: overrides.pop(k) for k in list(overrides) if k not in args}
    args.update(overrides)
    token_logprobs(args["hidden"], args["lm_head_weight"], args["targets"], **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("overrides", "name"),
    [
        ({"hidden": torch.zeros(4, 2)}, "hidden"),
        ({"hidden": torch.zeros(3)}, "hidden"),
        ({"hidden": torch.zeros(4, 3, dtype=torch.int64)}, "hidden"),
        ({"hidden": [[0.0] * 3] * 4}, "hidden"),
        ({"lm_head_weight": torch.zeros(5, 3, 1)}, "lm_head_weight"),
        ({"lm_head_weight": torch.zeros(0, 3)}, "lm_head_weight"),
        ({"lm_head_weight": torch.zeros(5, 3, dtype=F64)}, "lm_head_weight"),
        ({"targets": torch.tensor([0, 1, 2])}, "targets"),
        ({"targets": torch.tensor([0, 1, 2, 5])}, "targets"),
        ({"targets": torch.tensor([0, -1, 2, 3])}, "targets"),
        ({"targets": torch.tensor([0.0, 1.0, 2.0, 3.0])}, "targets"),
        ({"hidden": torch.zeros(0, 3), "targets": torch.zeros(0, dtype=torch.int64)}, "targets"),
        ({"temperature": 0.0}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),
        ({"temperature": float("inf")}, "temperature"),
        ({"chunk_size": 0}, "chunk_size"),
        ({"vocab_chunk_size": -1}, "vocab_chunk_size"),
    ],
)
def test_bad_input_names_the_argument(overrides: dict[str, object], name: str) -> None:
    with pytest.raises(InputError) as info:
        _call(**overrides)
    assert isinstance(info.value, ValueError)
    assert info.value.tensor == name, str(info.value)
