"""The CUDA edge model (harness.exact.cuda_rng_edges) confirmed on a CUDA device (gpu marker; skipped
without one by tests/conftest.py).  Counts are checked against Poisson bounds at false-alarm 1e-9 each
(derived from the model's exact per-draw probability, not tuned)."""

from fractions import Fraction

import pytest
import torch
from scipy.stats import poisson

from specproof.harness.exact.cuda_rng_edges import cuda_edge_values

pytestmark = pytest.mark.gpu

CHUNK = 1 << 28
ALPHA = 1e-9


def _within_poisson(count: int, probability: Fraction, draws: int) -> bool:
    mean = float(probability) * draws
    return poisson.ppf(ALPHA / 2, mean) <= count <= poisson.isf(ALPHA / 2, mean)


def _count(draw, chunks: int, predicate) -> int:
    return sum(int(predicate(draw()).sum().item()) for _ in range(chunks))


def test_float32_small_uniforms_are_odd_multiples_of_2_to_minus_33():
    g = torch.Generator("cuda").manual_seed(0)
    u = torch.rand(CHUNK, device="cuda", generator=g)
    small = u[(u > 0) & (u < 2.0**-9)].double() * 2.0**33  # exact: below 2^-9 the curand values are exact
    assert small.numel() > 0
    assert torch.equal(small, small.round()) and bool((small.remainder(2) == 1).all())  # CPU: multiples of 2^-24


@pytest.mark.parametrize("dtype, chunks", [("float32", 16), ("float16", 1), ("bfloat16", 1)])
def test_uniform_zero_rate_is_the_models(dtype, chunks):
    zero = cuda_edge_values("uniform", dtype)[0]
    g = torch.Generator("cuda").manual_seed(1)
    draw = lambda: torch.rand(CHUNK, device="cuda", dtype=getattr(torch, dtype), generator=g)  # noqa: E731
    count = _count(draw, chunks, lambda u: u == 0)
    assert _within_poisson(count, zero.probability, chunks * CHUNK), (count, float(zero.probability))


def test_float64_uniforms_above_one_half_are_multiples_of_2_to_minus_52():
    g = torch.Generator("cuda").manual_seed(2)
    u = torch.rand(1 << 24, device="cuda", dtype=torch.float64, generator=g)
    high = u[u >= 0.5]
    # the CPU's k 2^-53 grid puts half of these on odd multiples of 2^-53; curand's tie-to-even never does
    assert bool(((high * 2.0**52).remainder(1) == 0).all())


def test_float32_exponential_never_zero_and_its_smallest_value():
    small, large = cuda_edge_values("exponential", "float32")
    g = torch.Generator("cuda").manual_seed(3)
    lowest, count, highest = float("inf"), 0, 0.0
    for _ in range(16):
        e = torch.empty(CHUNK, device="cuda").exponential_(generator=g)
        lowest, highest = min(lowest, e.min().item()), max(highest, e.max().item())
        count += int((e == float(small.value)).sum().item())
    assert lowest == float(small.value) and _within_poisson(count, small.probability, 16 * CHUNK)
    assert highest <= float(large.value)


def test_multinomial_one_sample_is_argmax_of_weights_over_exponentials():
    w = torch.rand(64, 1000, device="cuda") * (torch.rand(64, 1000, device="cuda") > 0.3)
    g = torch.Generator("cuda").manual_seed(4)
    state = g.get_state()
    drawn = torch.multinomial(w, 1, generator=g).squeeze(1)
    g.set_state(state)
    e = torch.empty_like(w).exponential_(generator=g)
    assert torch.equal(drawn, (w / e).argmax(dim=-1))
