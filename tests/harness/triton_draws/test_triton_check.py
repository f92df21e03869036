"""Triton verifiers under the check's RNG edge injection (``TRITON_INTERPRET=1``): Triton's primitives are
draws of their own kinds (``tl.rand``, ...), injected with the edges of Triton's generator.  A batched
verifier accepting with ``u <= p/q`` on ``tl.rand`` is a certain FAIL with ``tl.rand``'s per-draw
probability of 0 (``2^-31``); ``u < p/q`` is not flagged; a Gumbel-max correction whose key has no
zero-key guard (masked tokens at a finite floor) lets a token of target probability 0 win, and with the
guard it cannot.  Skipped only where triton is not importable."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: kernels run on CPU

from fractions import Fraction  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402

from specproof.harness.check.contracts.batched import zero_target_scenarios  # noqa: E402
from specproof.harness.check.driver import check  # noqa: E402
from specproof.harness.check.intercept.injection import inject_check  # noqa: E402
from specproof.impls.kernels.rounds import assemble_emitted, rows_at  # noqa: E402
from specproof.impls.kernels.sampling import correction_weights  # noqa: E402

TL_RAND_MIN = 4.6566127342e-10
ROWS = 64
R = 16  # rows per program
TILE = 1 << 20  # Triton's largest tensor (numel)


@triton.jit
def drafted(p_ptr, q_ptr, ids_ptr, rows, live, i, K: tl.constexpr, V: tl.constexpr):
    """``(p(x_i), q(x_i))`` of draft ``i`` of each row in ``rows`` (target ``[B, K+1, V]``, draft ``[B, K, V]``)."""
    x = tl.load(ids_ptr + rows * K + i, mask=live, other=0)
    return (tl.load(p_ptr + (rows * (K + 1) + i) * V + x, mask=live, other=0.0),
            tl.load(q_ptr + (rows * K + i) * V + x, mask=live, other=1.0))


@triton.jit
def accepted_drafts(p_ptr, q_ptr, ids_ptr, out_ptr, seed, B, K: tl.constexpr, V: tl.constexpr,
                    R: tl.constexpr, STRICT: tl.constexpr):
    """Per row (``R`` rows a program): how many leading drafts pass ``u < p/q`` (``u <= p/q`` unless STRICT),
    ``u = tl.rand``."""
    rows = tl.program_id(0) * R + tl.arange(0, R)
    live = rows < B
    going = tl.full([R], 1, tl.int32)
    n = tl.zeros([R], tl.int32)
    for i in range(K):
        p, q = drafted(p_ptr, q_ptr, ids_ptr, rows, live, i, K, V)
        u = tl.rand(seed, rows * (K + 1) + i)
        if STRICT:
            ok = u < p / q
        else:
            ok = u <= p / q
        going = going * ok.to(tl.int32)
        n += going
    tl.store(out_ptr + rows, n, mask=live)


@triton.jit
def gumbel_draw(w_ptr, out_ptr, seed, B, V: tl.constexpr, BLOCK: tl.constexpr, R: tl.constexpr,
                GUARD: tl.constexpr):
    """Per row: ``argmax log w - log E`` with ``E = -log(1 - u)``, masked tokens at a finite floor; GUARD
    clamps ``E`` (0 when ``u`` is 0 or below 2^-25, where ``1 - u`` rounds to 1) to the smallest ``tl.rand``."""
    rows = tl.program_id(0) * R + tl.arange(0, R)
    offsets = tl.arange(0, BLOCK)
    live = rows < B
    inside = (offsets < V)[None, :] & live[:, None]
    w = tl.load(w_ptr + rows[:, None] * V + offsets[None, :], mask=inside, other=0.0)
    logits = tl.where(w > 0, tl.log(w), -1.0e30)
    u = tl.rand(seed, rows[:, None] * BLOCK + offsets[None, :])
    exponential = -tl.log(1.0 - u)
    if GUARD:
        exponential = tl.maximum(exponential, TL_RAND_MIN)
    keys = tl.where(inside, logits - tl.log(exponential), -float("inf"))
    tl.store(out_ptr + rows, tl.argmax(keys, 1), mask=live)


@triton.jit
def hashed_acceptance(p_ptr, q_ptr, ids_ptr, out_ptr, seed, B, K: tl.constexpr, V: tl.constexpr, R: tl.constexpr):
    """``u * q < p`` with ``u`` hashed from the seed and the row's slot (xor-shift mixing, as seeded kernels
    do): no Triton primitive, nothing the injection can reach."""
    rows = tl.program_id(0) * R + tl.arange(0, R)
    live = rows < B
    going = tl.full([R], 1, tl.int32)
    n = tl.zeros([R], tl.int32)
    for i in range(K):
        p, q = drafted(p_ptr, q_ptr, ids_ptr, rows, live, i, K, V)
        h = (seed + rows * (K + 1) + i).to(tl.uint32)
        h = h ^ (h >> 16)
        h = h * 0x45D9F3B
        h = h ^ (h >> 16)
        u = ((h >> 8).to(tl.float32) + 0.5) * (1.0 / 16777216.0)
        going = going * (u * q < p).to(tl.int32)
        n += going
    tl.store(out_ptr + rows, n, mask=live)


def _seed(generator):
    return int(torch.randint(0, 2**31 - 1, (1,), generator=generator))


def _round(draft_probs, target_probs, draft_token_ids, generator, strict, gumbel="guarded"):
    """One round in two Triton kernels (the acceptance test, then the correction or bonus by Gumbel-max over
    ``max(p - q, 0)`` or ``p``); their ``tl.rand`` seeds come from the harness generator."""
    batch, drafts, vocab = draft_probs.shape
    p, q = target_probs.float().contiguous(), draft_probs.float().contiguous()
    accepted = torch.empty(batch, dtype=torch.int32)
    accepted_drafts[(triton.cdiv(batch, R),)](p, q, draft_token_ids.contiguous(), accepted, _seed(generator), batch,
                                              K=drafts, V=vocab, R=R, STRICT=strict)
    n = accepted.to(torch.int64)
    weights = correction_weights(rows_at(p, n), rows_at(q, n.clamp(max=drafts - 1)), n == drafts).contiguous()
    drawn = torch.empty(batch, dtype=torch.int32)
    block = triton.next_power_of_2(vocab)
    rows = max(1, min(R, TILE // block))  # a [rows, block] tile stays within Triton's largest tensor
    gumbel_draw[(triton.cdiv(batch, rows),)](weights, drawn, _seed(generator), batch, V=vocab, BLOCK=block, R=rows,
                                             GUARD=gumbel == "guarded")
    return assemble_emitted(draft_token_ids, n, drawn.to(torch.int64))


def triton_le(draft_probs, target_probs, draft_token_ids, generator):
    return _round(draft_probs, target_probs, draft_token_ids, generator, strict=False)


def triton_strict_guarded(draft_probs, target_probs, draft_token_ids, generator):
    return _round(draft_probs, target_probs, draft_token_ids, generator, strict=True)


def triton_gumbel_unguarded(draft_probs, target_probs, draft_token_ids, generator):
    return _round(draft_probs, target_probs, draft_token_ids, generator, strict=True, gumbel="unguarded")


def _scenarios():
    return [s for s in zero_target_scenarios("float32") if s.name in ("disjoint supports", "one-hot target")]


def _inject(fn):
    return inject_check(fn, rows=ROWS, seed=2, scenarios=_scenarios())


def test_le_on_tl_rand_is_a_certain_fail_with_tritons_probability():
    result = check(triton_le, samples=64, seed=2, scenarios=_scenarios(), progress=False)
    assert result.verdict.value == "fail", result.summary()
    finding = next(f for f in result.injection["findings"] if f["kind"] == "tl.rand")
    assert finding["label"] == "zero" and "target probability 0" in finding["problem"]
    assert finding["edges"][0]["probability"] == "1/2147483648"  # words 0 and 2^32 - 1 of 2^32
    assert finding["rate_bound"] is not None and finding["reproducible"]
    assert "tl.rand draw (Triton's generator, under TRITON_INTERPRET=1) is zero" in result.summary()


def test_strict_test_with_a_guarded_key_is_not_flagged_and_its_draws_are_injected():
    """The negative side of both pairs: ``u < p/q`` (against ``triton_le``) with the guarded Gumbel key
    (against ``triton_gumbel_unguarded``), under every ``tl.rand`` edge."""
    result = _inject(triton_strict_guarded)
    assert result.verdict == "not-flagged", result.summary()
    assert any(d.startswith("tl.rand float32 on triton-interpreter") and "injectable as tl.rand" in d
               for d in result.draw_summary())
    assert {e.label for e in result.edges_tried if e.kind == "rand"} == {"zero", "smallest-positive",
                                                                         "largest-below-1"}


def test_unguarded_gumbel_key_lets_a_masked_token_win():
    """``E = -log(1 - u)`` is 0 at ``u = 0`` and at the smallest ``tl.rand`` (``1 - 2^-31`` rounds to 1): a
    masked token's key ``-1e30 - log 0`` is ``+inf``; the strict acceptance rules out the acceptance test.
    The same round with the guard is ``triton_strict_guarded``, not flagged above."""
    flagged = _inject(triton_gumbel_unguarded)
    assert flagged.verdict == "flagged", flagged.summary()
    assert {f.kind for f in flagged.findings} == {"tl.rand"}
    assert all("target probability 0" in f.problem for f in flagged.findings)
    assert {f.label for f in flagged.findings} == {"zero", "smallest-positive"}
    assert flagged.findings[0].edges[0].probability == Fraction(1, 2**31)


def triton_hashed(draft_probs, target_probs, draft_token_ids, generator):
    """Acceptance coins from an integer hash in the kernel, and the correction's needle from an integer hash
    in torch (a torch.rand would be injectable): the only torch draw is the seed."""
    batch, drafts, vocab = draft_probs.shape
    p, q = target_probs.float().contiguous(), draft_probs.float().contiguous()
    seed = _seed(generator)
    accepted = torch.empty(batch, dtype=torch.int32)
    hashed_acceptance[(triton.cdiv(batch, R),)](p, q, draft_token_ids.contiguous(), accepted, seed, batch, K=drafts,
                                                V=vocab, R=R)
    n = accepted.to(torch.int64)
    weights = correction_weights(rows_at(p, n), rows_at(q, n.clamp(max=drafts - 1)), n == drafts)
    words = (torch.arange(batch, dtype=torch.int64) + seed) * 2654435761 % 2**32
    needle = ((words >> 8).to(torch.float32) + 0.5) / 2**24
    final = (weights.cumsum(-1) <= needle[:, None] * weights.sum(-1, keepdim=True)).sum(-1).clamp(max=vocab - 1)
    return assemble_emitted(draft_token_ids, n, final)


def test_a_kernel_hashing_its_own_randomness_is_reported_as_not_tested():
    result = inject_check(triton_hashed, rows=16, seed=2, scenarios=_scenarios()[:1])
    assert result.verdict == "no-interceptable-randomness", result.summary()
    assert "rare-draw behaviour was NOT tested" in result.summary()
    line = next(d for d in result.draw_summary() if d.startswith("Triton kernel hashed_acceptance"))
    assert "integer hashes" in line and "xor-shift mixing" in line and "NOT tested" in line
