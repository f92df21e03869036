"""RNG boundary injection: the edge model against torch, the interception, and both directions
(rare-draw bugs flagged black-box; exact verifiers never flagged by a value the generator produces)."""

import math
from fractions import Fraction

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import specproof.impls as impls
from specproof.errors import SpecproofInputError
from specproof.harness.drift.grid import measure_grid, uniform_grid
from specproof.harness.exact.rng_edges import EDGE_LABELS, edge_values, exponential_value
from specproof.harness.check.contracts.batched import zero_target_scenarios
from specproof.harness.check.intercept.injection import EdgeInjection, inject_check
from specproof.harness.check.contracts.batched.scenarios import Scenario
from specproof.impls.kernels.rounds import assemble_emitted, drafted_probs, leading_accepts
from specproof.impls.kernels.acceptance import accept_log, accept_product, accept_ratio
from specproof.impls.verifiers.canonical import final_weights, inverse_cdf_round
from specproof.impls.kernels.sampling import draw_exponential_race, draw_multinomial

ROWS = 256
TWO = Fraction(2)


# -- verifiers under test (batched contract, drawing their own randomness) ------------------------

def _accept_then_race(accept, draft_probs, target_probs, ids, u, generator):
    accepted = accept(u, drafted_probs(target_probs, ids), drafted_probs(draft_probs, ids))
    n = leading_accepts(accepted)
    token = draw_exponential_race(final_weights(draft_probs, target_probs, n), generator)
    return assemble_emitted(ids, n, token)


def vllm_prefix_float32(draft_probs, target_probs, ids, generator):
    """vLLM v1 before its fix: float32 uniforms, ``target / draft >= u``."""
    u = torch.rand(ids.shape, dtype=torch.float32, generator=generator)
    return _accept_then_race(lambda u, p, q: (p.float() / q.float()) >= u, draft_probs, target_probs, ids, u,
                             generator)


def transformers_style(draft_probs, target_probs, ids, generator):
    """``r = rand_like(p/q)`` on the global RNG, ``r <= p/q``, multinomial correction."""
    p, q = drafted_probs(target_probs, ids), drafted_probs(draft_probs, ids)
    ratio = p / q
    r = torch.rand_like(ratio)
    n = leading_accepts(r <= ratio)
    token = draw_multinomial(final_weights(draft_probs, target_probs, n), None)
    return assemble_emitted(ids, n, token)


def coin_le_ratio(draft_probs, target_probs, ids, generator):
    """``coin <= min(1, p/q)`` with ``Tensor.uniform_`` coins, inverse-CDF final draw."""
    coins = torch.empty((ids.shape[0], ids.shape[1] + 1), dtype=draft_probs.dtype).uniform_(generator=generator)
    le = lambda u, p, q: u <= torch.clamp(p / q, max=1.0)  # noqa: E731
    return inverse_cdf_round(le, draft_probs, target_probs, ids, coins)


def unguarded_race(draft_probs, target_probs, ids, generator):
    """Exact acceptance, but the race ``argmax(w / E)`` without a zero-key guard: ``0/0`` NaN wins."""
    u = torch.rand(ids.shape, dtype=draft_probs.dtype, generator=generator)
    n = leading_accepts(accept_ratio(u, drafted_probs(target_probs, ids), drafted_probs(draft_probs, ids)))
    w = final_weights(draft_probs, target_probs, n)
    token = (w / torch.empty_like(w).exponential_(generator=generator)).argmax(-1)
    return assemble_emitted(ids, n, token)


def _exact(accept):
    def verify(draft_probs, target_probs, ids, generator):
        u = torch.rand(ids.shape, dtype=draft_probs.dtype, generator=generator)
        return _accept_then_race(accept, draft_probs, target_probs, ids, u, generator)
    verify.__name__ = f"exact_{accept.__name__}"
    return verify


def log_guarded_invcdf(draft_probs, target_probs, ids, generator):
    """Log form with an explicit ``log(0)`` guard on ``p``; uniforms from ``rand``, inverse-CDF draw."""
    def accept(u, p, q):
        log_p = torch.where(p > 0, torch.log(p), torch.full_like(p, -torch.inf))
        return (q > 0) & (p > 0) & (torch.log(u) + torch.log(q) < log_p)
    u = torch.rand((ids.shape[0], ids.shape[1] + 1), dtype=draft_probs.dtype, generator=generator)
    return inverse_cdf_round(accept, draft_probs, target_probs, ids, u)


def raises_on_zero(draft_probs, target_probs, ids, generator):
    u = torch.rand((ids.shape[0], ids.shape[1] + 1), dtype=draft_probs.dtype, generator=generator)
    if bool((u == 0).any()):
        raise ValueError("zero uniform")
    return inverse_cdf_round(accept_ratio, draft_probs, target_probs, ids, u)


def randn_only(draft_probs, target_probs, ids, generator):
    """Gumbel-style draw from randn only (no modelled draw): accepts nothing, draws argmax(p + noise*0)."""
    noise = torch.randn(target_probs.shape[:1], generator=generator)
    token = (target_probs[:, 0] + 0 * noise.unsqueeze(-1).to(target_probs.dtype)).argmax(-1)
    return assemble_emitted(ids, torch.zeros(ids.shape[0], dtype=torch.int64), token)


# -- the edge model ---------------------------------------------------------------------------------

def test_uniform_edges_follow_the_grid():
    for dtype, bits in (("float32", 24), ("float64", 53)):
        zero, small, top = edge_values("uniform", dtype)
        assert [e.label for e in (zero, small, top)] == list(EDGE_LABELS["uniform"])
        assert (zero.value, small.value, top.value) == (0, TWO**-bits, 1 - TWO**-bits)
        assert zero.probability == small.probability == top.probability == TWO**-bits
    zero, small, top = edge_values("uniform", "bfloat16")
    assert zero.probability == TWO**-24 + TWO**-9 == uniform_grid("bfloat16").zero_mass()
    assert small.value == TWO**-24 and top.value == 1 - TWO**-8 and top.value < 1
    with pytest.raises(SpecproofInputError, match="device"):
        edge_values("uniform", "float32", "meta")


def test_bfloat16_uniform_edges_are_what_torch_rand_draws():
    values = torch.rand(1 << 22, dtype=torch.bfloat16, generator=torch.Generator().manual_seed(3)).double()
    zero, small, top = edge_values("uniform", "bfloat16")
    assert float(values.max()) == float(top.value) and float(values[values > 0].min()) >= float(small.value)
    assert int((values == 0).sum()) > 0  # P(0) ~ 2^-9: thousands of zeros in 2^22 draws


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_exponential_model_matches_torch(dtype):
    n = 20_000
    e = torch.empty(n, dtype=getattr(torch, dtype)).exponential_(generator=torch.Generator().manual_seed(7))
    k = (torch.rand(n, dtype=torch.float64, generator=torch.Generator().manual_seed(7)) * 2.0**53).long()
    model = [exponential_value(int(x), dtype) for x in k[:2000].tolist()]
    assert model == [Fraction(v) for v in e[:2000].double().tolist()]


def test_exponential_edges():
    zero, small, top = edge_values("exponential", "float32")
    assert (zero.value, zero.probability) == (0, TWO**-53)  # only k = 0
    assert small.value == TWO**-53 and 36 < top.value < 37 and top.probability == TWO**-53
    zero16 = edge_values("exponential", "float16")[0]
    assert TWO**-26 < zero16.probability < TWO**-24  # every E below ~2^-25 rounds to 0 in float16
    first = int(zero16.probability * 2**53)
    assert exponential_value(first - 1, "float16") == 0 < exponential_value(first, "float16")


# -- the interception ---------------------------------------------------------------------------------

def test_mode_sees_every_spelling_and_injects_a_known_fraction():
    gen = torch.Generator().manual_seed(0)
    x = torch.zeros(64, 64)
    with EdgeInjection("uniform", "zero", Fraction(1, 4), seed=1) as mode:
        a = torch.rand(64, 64, generator=gen)
        b = torch.rand_like(x)
        c = torch.empty(64, 64).uniform_(generator=gen)
        d = torch.empty(64, 64).uniform_(-1, 1, generator=gen)  # seeded: a real 0 has probability 2^-24 per entry
        e = torch.empty(64, 64).exponential_(generator=gen)
        torch.multinomial(torch.ones(4, 3), 1, generator=gen)
    kinds = [(r.op, r.kind) for r in mode.records]
    assert kinds[:5] == [("aten.rand", "uniform"), ("aten.rand_like", "uniform"), ("aten.uniform_", "uniform"),
                         ("aten.uniform_", None), ("aten.exponential_", "exponential")]
    assert mode.records[5].op == "aten.multinomial" and mode.records[5].injected == 0
    for tensor, record in zip((a, b, c), mode.records):
        assert int((tensor == 0).sum()) == record.injected and 0.2 < record.injected / 4096 < 0.3
    assert int((d == 0).sum()) == 0 and mode.records[3].injected == 0 and int((e == 0).sum()) == 0
    with EdgeInjection("exponential", "zero", Fraction(1), seed=1):
        f = torch.empty(8).exponential_()
        g = torch.nn.functional.gumbel_softmax(torch.zeros(4, 3))  # exponential_ inside a composite op
    assert bool((f == 0).all()) and bool(torch.isnan(g).all())


def test_multinomial_race_is_replayed_exactly():
    w = torch.rand(32, 50, generator=torch.Generator().manual_seed(1)) ** 4
    plain = torch.multinomial(w, 1, generator=torch.Generator().manual_seed(2))
    with EdgeInjection() as seen:
        same = torch.multinomial(w, 1, generator=torch.Generator().manual_seed(2))
    with EdgeInjection("multinomial", "largest", Fraction(1)) as mode:  # every key E = 53 ln 2: argmax w
        top = torch.multinomial(w, 1, generator=torch.Generator().manual_seed(2))
    assert torch.equal(plain, same) and seen.records[0].kind == "multinomial"
    assert torch.equal(top.squeeze(1), w.argmax(-1)) and mode.records[0].injected == w.numel()


def test_torch_multinomial_zero_key_is_a_sampler_finding():
    """Opt-in: torch.multinomial itself emits a zero-weight token when a key E == 0 (2^-53 in float32)."""
    result = inject_check(impls.get("canonical-ratio-multinomial").fn, rows=ROWS, kinds=("multinomial",))
    assert result.flagged and {(f.kind, f.label) for f in result.findings} == {("multinomial", "zero")}
    assert result.findings[0].edges[0].probability == TWO**-53
    assert "torch's own sampler" in result.findings[0].describe()


@pytest.mark.slow  # torch.compile start-up (seconds)
def test_draws_inside_torch_compile_are_not_reached():
    compiled = torch.compile(lambda x: torch.rand(4) + x)
    with EdgeInjection("uniform", "zero", Fraction(1)) as mode:
        inside = compiled(torch.zeros(4))
        outside = torch.rand(4)
    assert bool((inside > 0).all()) and bool((outside == 0).all())  # compiled: unseen, but it still runs
    assert [r.kind for r in mode.records if r.op == "aten.rand"] == ["uniform"]


@pytest.mark.slow  # compiles the canonical core (seconds)
def test_compiled_core_runs_under_injection():
    result = inject_check(impls.get("canonical-ratio-invcdf-compiled").fn, rows=ROWS)
    assert result.verdict == "not-flagged", result.summary()


# -- flagged black-box ---------------------------------------------------------------------------------

@pytest.mark.parametrize("verify", [impls.get("le-ratio-invcdf").fn, vllm_prefix_float32, transformers_style,
                                    coin_le_ratio], ids=lambda f: getattr(f, "__name__", "le-ratio"))
def test_le_family_flagged_black_box(verify):
    result = inject_check(verify, rows=ROWS)
    assert result.flagged, result.summary()
    zero_hits = [f for f in result.findings if f.label == "zero" and f.kind == "uniform"]
    assert zero_hits and all(f.reproducible for f in zero_hits)
    assert all(f.edges[0].probability == TWO**-24 and f.edges[0].value == 0 for f in zero_hits)
    assert all(0 < f.estimated_rate < f.injected_rate for f in zero_hits)
    assert {f.label for f in result.findings} == {"zero"}  # no other edge is harmful for these


def test_rate_estimate_agrees_with_the_exact_grid_law():
    """Disjoint supports (every draft has p = 0): ``u <= p/q`` fails iff ``u_0 == 0``, so the exact
    impossible mass is ``2^-24`` (measure_grid on the uniforms core) and the flagged count is
    Binomial(rows, f) up to the natural zeros (2^-24): inside its two-sided 1e-6 tail."""
    scenario = next(s for s in zero_target_scenarios() if s.name == "disjoint supports")
    exact = measure_grid(impls.get("le-ratio-uniforms"), scenario.realise("float32"))
    assert exact.impossible_mass == TWO**-24
    rows, f = 1024, Fraction(1, 16)
    finding, = inject_check(impls.get("le-ratio-invcdf").fn, rows=rows, fraction=f, scenarios=[scenario]).findings
    lower = sum(math.comb(rows, j) * f**j * (1 - f) ** (rows - j) for j in range(finding.flagged_rows + 1))
    upper = sum(math.comb(rows, j) * f**j * (1 - f) ** (rows - j) for j in range(finding.flagged_rows, rows + 1))
    assert min(lower, upper) > Fraction(1, 2 * 10**6)
    p = finding.edges[0].probability
    assert finding.estimated_rate == Fraction(finding.flagged_rows, rows) * p / (f + (1 - f) * p)


def test_rate_bound_is_a_rigorous_upper_bound_on_the_exact_rate():
    """``u <= p/q`` on disjoint supports fails on the real generator with exact probability ``2^-24`` per
    round (measure_grid); the finding's bound is the expected number of zero-valued uniforms per round (a
    union bound) so it is at least that and exactly draws/rows * 2^-24; an unaided finding has no bound."""
    scenario = next(s for s in zero_target_scenarios() if s.name == "disjoint supports")
    exact = measure_grid(impls.get("le-ratio-uniforms"), scenario.realise("float32"))
    rows = 512
    finding, = inject_check(impls.get("le-ratio-invcdf").fn, rows=rows, scenarios=[scenario]).findings
    draws, = finding.draws
    assert draws >= rows  # at least one coin per round
    assert finding.rate_bound == Fraction(draws, rows) * TWO**-24 >= exact.impossible_mass
    assert finding.rate_bound >= finding.estimated_rate
    assert "real-generator rate at most" in finding.describe()
    assert finding.as_json()["rate_bound"] and finding.as_json()["draws"] == [draws]


def test_each_device_injects_its_own_generators_edges():
    """CPU exponential draws have a zero edge; CUDA's (curand, clamped) never return 0, so that pass does
    not exist there; a device without an edge model is refused, naming the argument."""
    from specproof.harness.check.intercept.injection import _edge

    assert _edge(torch.device("cpu"), "exponential", "float32", "zero").value == 0
    assert _edge(torch.device("cuda"), "exponential", "float32", "zero") is None
    assert _edge(torch.device("cuda"), "uniform", "float32", "zero") is not None
    with pytest.raises(SpecproofInputError, match="device"):
        inject_check(impls.get("le-ratio-invcdf").fn, device="meta", rows=ROWS)


def test_bfloat16_probability_is_the_wrapped_mass():
    result = inject_check(impls.get("le-ratio-invcdf").fn, dtype="bfloat16", rows=ROWS)
    assert result.flagged
    injected = [f for f in result.findings if f.kind is not None]  # bf16 u == 0 (~2^-9) shows unaided too
    assert injected and {f.edges[0].probability for f in injected} == {TWO**-24 + TWO**-9}


@pytest.mark.slow  # importing transformers takes seconds
def test_transformers_adapter_flagged_in_the_releases_that_test_r_le_p_over_q():
    pytest.importorskip("transformers")
    record = impls.get("transformers-speculative-sampling")
    result = inject_check(record.fn, rows=32,
                          scenarios=[s for s in zero_target_scenarios() if s.name == "disjoint supports"])
    if record.expected_exact:  # 5.25.0 or later: r < p/q
        assert not result.flagged, result.summary()
    else:
        assert result.flagged and result.findings[0].label == "zero", result.summary()


def test_unguarded_exponential_race_flagged_by_a_zero_key():
    result = inject_check(unguarded_race, rows=ROWS)
    assert result.flagged
    assert {(f.kind, f.label) for f in result.findings} == {("exponential", "zero")}
    assert result.findings[0].edges[0].probability == TWO**-53


def test_unaided_failure_is_reported_without_an_edge():
    """A bug that emits probability-0 tokens on ordinary draws is not credited to an injected value."""
    result = inject_check(impls.get("target-rows-shifted").fn, rows=ROWS)
    assert result.flagged and all(f.kind is None and f.reproducible for f in result.findings)
    assert "without injection" in result.findings[0].describe()


def test_raise_under_injection_is_a_finding():
    result = inject_check(raises_on_zero, rows=ROWS)
    assert result.flagged and result.findings[0].problem == "broke the contract or raised"
    assert "zero uniform" in result.findings[0].example


# -- never flagged -----------------------------------------------------------------------------------

# transformers' own function (exact from release 5.25.0): the slow test above, per release
EXACT_RECORDS = [r.name for r in impls.implementations(contract="batched", expected_exact=True)
                 if not r.compiled and r.name != "greedy" and r.needs_extra is None]


@pytest.mark.parametrize("name", EXACT_RECORDS)
def test_registry_exact_not_flagged(name):
    result = inject_check(impls.get(name).fn, rows=ROWS)
    assert result.verdict == "not-flagged", result.summary()


@pytest.mark.parametrize("verify", [_exact(accept_ratio), _exact(accept_product), _exact(accept_log),
                                    log_guarded_invcdf], ids=lambda f: f.__name__)
def test_exact_forms_not_flagged(verify):
    result = inject_check(verify, rows=ROWS)
    assert result.verdict == "not-flagged", result.summary()
    assert len(result.edges_tried) >= 3


def test_exact_bfloat16_not_flagged():
    result = inject_check(impls.get("canonical-ratio-invcdf").fn, dtype="bfloat16", rows=ROWS)
    assert result.verdict == "not-flagged", result.summary()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 5), st.integers(1, 3), st.integers(0, 2**31 - 1),
       st.sampled_from(["canonical-log-race", "canonical-product-invcdf"]))
def test_exact_never_flagged_on_random_zero_scenarios(vocab, k, seed, name):
    scenario = Scenario.random("h", vocab, k, seed, zeros=0.4)
    result = inject_check(impls.get(name).fn, rows=64, scenarios=[scenario], seed=seed)
    assert result.verdict == "not-flagged", result.summary()


# -- under a deadline (a time budget's share) ---------------------------------------------------------

def test_a_deadline_skips_the_passes_that_do_not_fit_lists_them_and_keeps_what_ran():
    """The rate the deadline reads (here: free for the first two passes, then far too slow) decides
    which passes run; the rest are listed, and a finding in those that ran still stands."""
    from specproof.harness.check.calls import Deadline

    def rate_after(free):
        asked = []

        def seconds_per_row():
            asked.append(1)
            return 0.0 if len(asked) <= free else 1e9
        return seconds_per_row

    clean = inject_check(impls.get("canonical-ratio-invcdf").fn, rows=64, deadline=Deadline(60.0, rate_after(2)))
    first = zero_target_scenarios()[0].name
    assert clean.verdict == "incomplete" and not clean.flagged and clean.passes == 2
    assert clean.not_run[:2] == (f"{first}: uniform edge 'smallest-positive'", f"{first}: uniform edge 'largest-below-1'")
    assert all(n.endswith("its baseline and edge passes") for n in clean.not_run[2:]) and len(clean.not_run) > 2
    assert "passes NOT run" in clean.summary() and clean.as_json()["not_run"] == list(clean.not_run)
    buggy = inject_check(impls.get("le-ratio-invcdf").fn, rows=ROWS, deadline=Deadline(60.0, rate_after(2)))
    assert buggy.verdict == "flagged" and {f.label for f in buggy.findings} == {"zero"} and buggy.not_run
    whole = inject_check(impls.get("canonical-ratio-invcdf").fn, rows=64, deadline=Deadline(60.0, lambda: 0.0))
    assert whole.verdict == "not-flagged" and not whole.not_run


# -- no randomness and bad input ---------------------------------------------------------------------

def test_no_interceptable_randomness_is_reported():
    greedy = inject_check(impls.get("greedy").fn, rows=64)
    assert greedy.verdict == "no-interceptable-randomness" and "NOT tested" in greedy.summary()
    normal = inject_check(randn_only, rows=64)
    assert normal.verdict == "no-interceptable-randomness"
    assert any("aten.randn" in line and "not injected" in line for line in normal.draw_summary())


@pytest.mark.parametrize("kwargs, argument", [({"fraction": 0}, "fraction"), ({"fraction": 2}, "fraction"),
                                              ({"fraction": 1e-300}, "fraction"),
                                              ({"rows": 0}, "rows"), ({"seed": -1}, "seed"),
                                              ({"kinds": ("normal",)}, "kinds"), ({"scenarios": []}, "scenarios"),
                                              ({"device": "meta"}, "device")])
def test_bad_input_names_the_argument(kwargs, argument):
    with pytest.raises(SpecproofInputError, match=argument):
        inject_check(impls.get("canonical-ratio-invcdf").fn, **kwargs)
