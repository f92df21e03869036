"""The backends interpret the same rule definitions identically at exact points."""

import math
from fractions import Fraction

import sympy
import torch
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from specproof.proofs import ExactArith, SympyArith, TorchArith, Z3Arith, step_law, step_rules
from specproof.proofs.arith import ExactLog, ExactLogSum
from specproof.proofs.arith.z3_backend import z3_fraction


@st.composite
def laws(draw, n=None, den=12, full_support=False):
    n = n if n is not None else draw(st.integers(2, 4))
    low = 1 if full_support else 0
    counts = draw(st.lists(st.integers(low, den), min_size=n, max_size=n).filter(lambda c: sum(c) > 0))
    total = sum(counts)
    return tuple(Fraction(c, total) for c in counts)


@given(st.data())
@settings(max_examples=25)
def test_every_registered_rule_agrees_in_exact_sympy_and_z3(data):
    n = data.draw(st.integers(2, 4))
    p, q = data.draw(laws(n)), data.draw(laws(n))
    sym, zar = SympyArith(), Z3Arith()
    for rule in step_rules():
        exact = step_law(ExactArith(), rule, p, q).output
        if rule.name != "typical":  # typical sums logarithms: exact and torch only
            s_out = step_law(sym, rule, tuple(sympy.Rational(x.numerator, x.denominator) for x in p),
                             tuple(sympy.Rational(x.numerator, x.denominator) for x in q)).output
            assert tuple(Fraction(int(sympy.fraction(v)[0]), int(sympy.fraction(v)[1])) for v in s_out) == exact
            z_out = step_law(zar, rule, tuple(zar.const(x) for x in p), tuple(zar.const(x) for x in q)).output
            assert tuple(z3_fraction(z3.simplify(v)) for v in z_out) == exact, rule.name


@given(st.data())
@settings(max_examples=25)
def test_torch_float64_is_close_to_exact_away_from_ties(data):
    p, q = data.draw(laws(3, den=97, full_support=True)), data.draw(laws(3, den=97, full_support=True))
    tar = TorchArith(torch.float64)
    tp = torch.tensor([float(x) for x in p], dtype=torch.float64)
    tq = torch.tensor([float(x) for x in q], dtype=torch.float64)
    for rule in step_rules():
        if rule.name == "typical":  # a threshold test: float and exact may split exactly at the threshold
            continue
        exact = step_law(ExactArith(), rule, p, q).output
        out = step_law(tar, rule, tp, tq).output
        assert torch.allclose(out, torch.tensor([float(x) for x in exact], dtype=torch.float64), atol=1e-9), rule.name


def test_mass_ahead_exact_and_torch_agree_with_ties_to_the_lower_index():
    key = (Fraction(1, 4), Fraction(1, 2), Fraction(1, 4))
    ar = ExactArith()
    assert ar.mass_ahead(key, ar.one) == (1, 0, 2)
    assert ar.mass_ahead(key, key) == (Fraction(1, 2), 0, Fraction(3, 4))
    t = TorchArith(torch.float64).mass_ahead(torch.tensor([0.25, 0.5, 0.25], dtype=torch.float64), 1)
    assert t.tolist() == [1.0, 0.0, 2.0]


@given(laws(4, den=20), st.fractions(Fraction(1, 100), Fraction(1)))
@settings(max_examples=40)
def test_log_sums_compare_like_real_logarithms(p, delta):
    ar = ExactArith()
    safe = ar.select(ar.eq(p, ar.zero), ar.one, p)
    neg_entropy = ar.total(ar.mul(p, ar.log(safe)))
    threshold = ar.add(ar.log(ar.const(delta)), neg_entropy)
    h = -sum(float(x) * math.log(float(x)) for x in p if x)
    real = float(delta) * math.exp(-h)
    for x, above in zip(p, ar.gt(ar.log(p), threshold)):
        if abs(float(x) - real) > 1e-9:
            assert above == (float(x) > real)


def test_log_sums_handle_minus_infinity_and_scaling():
    ar = ExactArith()
    minus_inf = ExactLog(Fraction(0))
    finite = ar.mul(Fraction(1, 2), ExactLog(Fraction(1, 4)))  # log(1/2)
    assert isinstance(finite, ExactLogSum)
    assert ar.lt(minus_inf, finite) and not ar.lt(finite, minus_inf)
    assert ar.eq(finite, ExactLog(Fraction(1, 2)))
    assert ar.eq(ar.total((ExactLog(Fraction(2)), ExactLog(Fraction(3)))), ExactLog(Fraction(6)))
