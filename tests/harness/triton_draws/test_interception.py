"""Edge injection into Triton's random primitives under the CPU interpreter: a verifier accepting with
``u <= p/q`` emits a probability-0 draft exactly where ``tl.rand`` is set to 0 (``u < p/q`` never does),
and a Gumbel-max resampler without a zero-key guard lets the injected token win (with the guard it cannot).
Skipped only where triton is not importable."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: kernels run on CPU

from fractions import Fraction  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402

from specproof.harness.exact.edge_models import edge_model  # noqa: E402
from specproof.harness.triton_draws.interception import (TritonEdgeInjection, randomness_sources,  # noqa: E402
                                                         require_interpreter)
from specproof.errors import SpecproofInputError  # noqa: E402

ROWS = 128
TL_RAND_MIN = 4.6566127342e-10


@triton.jit
def ratio_verifier(p_ptr, q_ptr, draft_ptr, out_ptr, seed, STRICT: tl.constexpr):
    row = tl.program_id(0)
    p = tl.load(p_ptr + row)
    q = tl.load(q_ptr + row)
    u = tl.rand(seed, row)
    if STRICT:
        accepted = u < p / q
    else:
        accepted = u <= p / q
    tl.store(out_ptr + row, tl.where(accepted, tl.load(draft_ptr + row), -1))


@triton.jit
def gumbel_resampler(logp_ptr, out_ptr, seed, V: tl.constexpr, GUARD: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, V)
    logp = tl.load(logp_ptr + row * V + offsets)
    u = tl.rand(seed, row * V + offsets)
    exponential = -tl.log(1.0 - u)  # 0 when u = 0, and for every u < 2^-25 (1 - u rounds to 1)
    if GUARD:  # the zero-key guard: clamping u would not do (1 - 2^-31 rounds to 1), clamp E
        exponential = tl.maximum(exponential, TL_RAND_MIN)
    keys = logp - tl.log(exponential)
    tl.store(out_ptr + row, tl.argmax(keys, 0))


@triton.jit
def hashed_uniforms(out_ptr, seed, N: tl.constexpr):
    i = tl.arange(0, N)
    x = (i + seed) * 0x9E3779B1
    x = x ^ (x >> 16)
    tl.store(out_ptr + i, (x & 0xFFFFFF).to(tl.float32) * (1.0 / 16777216))


@triton.jit
def words(out_ptr, seed, N: tl.constexpr):
    i = tl.arange(0, N)
    a, b, c, d = tl.randint4x(seed, i)
    tl.store(out_ptr + i, a)


def run_verifier(strict, injection=None):
    p = torch.zeros(ROWS)  # every draft has target probability 0
    q = torch.full((ROWS,), 0.5)
    draft = torch.full((ROWS,), 7, dtype=torch.int32)
    out = torch.empty(ROWS, dtype=torch.int32)
    ratio_verifier[(ROWS,)](p, q, draft, out, 11, STRICT=strict)
    return out


def test_le_on_tl_rand_accepts_a_probability_zero_draft_exactly_where_u_is_zero():
    assert (run_verifier(strict=False) == -1).all()  # without injection: never seen
    with TritonEdgeInjection({"rand": "zero"}, seed=3) as injection:
        out = run_verifier(strict=False)
    injected = torch.tensor([call.replaced == 1 for call in injection.calls])
    assert len(injection.calls) == ROWS and 0 < int(injected.sum()) < ROWS
    assert torch.equal(out == 7, injected)  # the p = 0 draft is emitted on every injected row, only there
    edge = injection.calls[0].edge
    assert edge == edge_model("triton").edge("rand", "float32", "zero")
    assert edge.probability == Fraction(1, 2**31)  # per-draw probability on the real generator


def test_strict_test_is_not_flagged_under_the_same_injection():
    with TritonEdgeInjection({"rand": "zero"}, seed=3) as injection:
        out = run_verifier(strict=True)
    assert injection.replaced > 0 and (out == -1).all()


def run_gumbel(guard):
    vocab = 4
    p = torch.tensor([1.0] + [2.0**-40] * (vocab - 1))
    logp = torch.log(p).expand(ROWS, vocab).contiguous()
    out = torch.empty(ROWS, dtype=torch.int64)
    with TritonEdgeInjection({"rand": "zero"}, seed=5) as injection:
        gumbel_resampler[(ROWS,)](logp, out, 17, V=vocab, GUARD=guard)
    return out, injection


@pytest.mark.filterwarnings("ignore:divide by zero encountered in log:RuntimeWarning")  # log(0): the edge itself
def test_unguarded_gumbel_key_lets_the_injected_token_win():
    unguarded, injection = run_gumbel(guard=False)
    guarded, again = run_gumbel(guard=True)
    assert [c.positions for c in injection.calls] == [c.positions for c in again.calls]  # same draws injected
    rare_rows = 0
    for row, call in enumerate(injection.calls):
        hit = [i for _, i in call.positions]
        if hit and 0 not in hit:  # a zero key on a token of probability 2^-40 only
            rare_rows += 1
            assert unguarded[row].item() == min(hit)  # +inf key: it wins for certain
    assert rare_rows > 0
    assert (guarded == 0).all()  # clamped keys stay below token 0's: a 2^-40 token cannot win here


def test_injection_is_reproducible_and_restores_the_primitives():
    original = tl.rand
    with TritonEdgeInjection({"rand": "largest-below-1"}, seed=9) as first:
        a = run_verifier(strict=True)
    with TritonEdgeInjection({"rand": "largest-below-1"}, seed=9) as second:
        b = run_verifier(strict=True)
    assert torch.equal(a, b) and [c.positions for c in first.calls] == [c.positions for c in second.calls]
    assert tl.rand is original
    assert "128 Triton primitive calls (rand)" in first.summary()


def test_randint_words_are_replaced_bitcast():
    out = torch.empty(64, dtype=torch.int32)
    with TritonEdgeInjection({"randint": "all-ones"}, fraction=Fraction(1, 2), seed=1) as injection:
        words[(1,)](out, 5, N=64)
    hit = [i for which, i in injection.calls[0].positions if which == 0]
    assert injection.calls[0].primitive == "randint4x" and hit
    assert (out[hit] == -1).all()  # uint32 0xFFFFFFFF stored as int32 -1


def test_randomness_sources_tells_primitives_from_hashes():
    sources = randomness_sources(gumbel_resampler)
    assert sources.primitives == ("rand",) and not sources.hash_based
    hashed = randomness_sources(hashed_uniforms)
    assert hashed.hash_based and not hashed.primitives
    assert "integer hashes" in hashed.describe() and "0x9e3779b1" in hashed.describe()


def test_bad_arguments_are_named():
    require_interpreter()
    with pytest.raises(SpecproofInputError, match="labels"):
        TritonEdgeInjection({"rand": "largest"})
    with pytest.raises(SpecproofInputError, match="fraction"):
        TritonEdgeInjection({"rand": "zero"}, fraction=0)
    with pytest.raises(SpecproofInputError, match="kernel"):
        randomness_sources(3)
