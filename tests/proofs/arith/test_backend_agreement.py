"""Every backend gives every Arith operation and every catalogue step rule the same value.

On the same rational inputs: exact Fractions (the reference), the vectorised exact path
(``harness.fastexact``), sympy and z3 (evaluated at concrete points) must agree *identically*; torch
float64 gets dyadic inputs with small denominators, on which sums, differences, products and
comparisons are exact and each division is correctly rounded (IEEE 754), so a single operation must
equal ``float(exact)`` exactly and a composed step law must lie within the first-order bound
``(2 V + 12) u`` derived in :func:`_torch_step_bound`.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import sympy
import torch
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from specproof.proofs.arith.fast import DVec, FastExactArith, QVec
from specproof.proofs import ExactArith, SympyArith, TorchArith, Z3Arith, step_law, step_rules
from specproof.proofs.arith import ExactLog, ExactLogSum, SympyLog, Z3Log
from specproof.proofs.arith.z3_backend import z3_fraction
from specproof.proofs.engine.every_size import GenericCoordinateArith, SympyGenericCoordinate

DYADIC_BITS = 6
UNIT_ROUNDOFF = Fraction(1, 2**53)


# -- conversions --------------------------------------------------------------------------------------

class Backend:
    """One backend with conversions of an exact scalar/vector into its values and back."""

    def __init__(self, name: str):
        self.name = name

    def arith(self):
        return {"exact": ExactArith, "fast": FastExactArith, "sympy": SympyArith, "z3": Z3Arith,
                "torch": lambda: TorchArith(torch.float64)}[self.name]()

    def encode(self, ar, x):
        if isinstance(x, tuple):
            if self.name == "exact":
                return x
            if self.name == "fast":
                den = math.lcm(*(v.denominator for v in x))
                return DVec(np.array([int(v * den) for v in x], dtype=object), den)
            if self.name == "sympy":
                return tuple(sympy.Rational(v.numerator, v.denominator) for v in x)
            if self.name == "z3":
                return tuple(ar.const(v) for v in x)
            return torch.tensor([float(v) for v in x], dtype=torch.float64)
        if self.name in ("exact", "fast"):
            return x
        if self.name == "sympy":
            return sympy.Rational(x.numerator, x.denominator)
        if self.name == "z3":
            return ar.const(x)
        return torch.tensor(float(x), dtype=torch.float64)

    def decode(self, value):
        """A number, a bool or a tuple of them (Fractions for exact backends, floats for torch)."""
        if isinstance(value, (DVec, QVec)):
            return tuple(value.fraction(i) for i in range(len(value)))
        if isinstance(value, np.ndarray):
            return tuple(bool(v) for v in value.tolist())
        if isinstance(value, torch.Tensor):
            out = value.tolist()
            return tuple(out) if isinstance(out, list) else out
        if isinstance(value, tuple):
            return tuple(self.decode(v) for v in value)
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        if isinstance(value, Fraction):
            return value
        if isinstance(value, sympy.Basic):
            if value in (sympy.true, sympy.false):
                return bool(value)
            if not value.is_Rational:  # numeric inputs must give a sympy Rational, not an expression
                raise AssertionError(f"sympy left {value!r} unevaluated")
            return Fraction(int(value.p), int(value.q))
        if z3.is_expr(value):
            value = z3.simplify(value)
            if z3.is_true(value) or z3.is_false(value):
                return z3.is_true(value)
            return z3_fraction(value)
        return value


EXACT_BACKENDS = [Backend(n) for n in ("exact", "fast", "sympy", "z3")]
TORCH = Backend("torch")


def _torch_shape(value, reference):
    """Torch's ``total`` keeps the vocabulary axis (size 1) so it broadcasts: a scalar there."""
    if not isinstance(reference, tuple) and isinstance(value, tuple) and len(value) == 1:
        return value[0]
    return value


def _as_float(value):
    if isinstance(value, tuple):
        return tuple(_as_float(v) for v in value)
    return value if isinstance(value, bool) else float(value)


# -- inputs -------------------------------------------------------------------------------------------

def dyadic(low: int = -4, high: int = 4):
    """Rationals ``m / 2^6`` in ``[low, high]``: exactly representable in float64."""
    scale = 2**DYADIC_BITS
    return st.integers(low * scale, high * scale).map(lambda m: Fraction(m, scale))


@st.composite
def operands(draw, n):
    kind = draw(st.sampled_from(["vector", "scalar"]))
    if kind == "scalar":
        return draw(dyadic())
    return tuple(draw(st.lists(dyadic(), min_size=n, max_size=n)))


def _nonzero(x):
    return all(v != 0 for v in x) if isinstance(x, tuple) else x != 0


OPERATIONS = {
    "add": lambda ar, a, b: ar.add(a, b),
    "sub": lambda ar, a, b: ar.sub(a, b),
    "mul": lambda ar, a, b: ar.mul(a, b),
    "div": lambda ar, a, b: ar.div(a, b),
    "minimum": lambda ar, a, b: ar.minimum(a, b),
    "maximum": lambda ar, a, b: ar.maximum(a, b),
    "lt": lambda ar, a, b: ar.lt(a, b),
    "le": lambda ar, a, b: ar.le(a, b),
    "eq": lambda ar, a, b: ar.eq(a, b),
    "gt": lambda ar, a, b: ar.gt(a, b),
    "ge": lambda ar, a, b: ar.ge(a, b),
    "select": lambda ar, a, b: ar.select(ar.lt(a, b), a, b),
    "relu": lambda ar, a, b: ar.relu(ar.sub(a, b)),
    "clamp": lambda ar, a, b: ar.clamp(a, ar.minimum(b, ar.zero), ar.maximum(b, ar.zero)),
    "safe_div": lambda ar, a, b: ar.safe_div(a, b, ar.const(Fraction(1, 3))),
    "total": lambda ar, a, b: ar.total(ar.add(a, b)),
    "normalise": lambda ar, a, b: ar.normalise(ar.relu(a)),
    "const": lambda ar, a, b: ar.add(a, ar.const(Fraction(-3, 8))),
}
"""Each Arith operation (primitive and derived), applied to two operands (scalar or vector)."""


def _shape_ok(name, a, b):
    if name == "div":
        return _nonzero(b)
    if name == "normalise":
        return isinstance(a, tuple)
    return True


@given(st.data())
@settings(max_examples=150, deadline=None)
def test_every_arith_operation_agrees_in_every_backend(data):
    n = data.draw(st.integers(1, 4))
    a, b = data.draw(operands(n)), data.draw(operands(n))
    name = data.draw(st.sampled_from(sorted(OPERATIONS)))
    if not _shape_ok(name, a, b):
        return
    op = OPERATIONS[name]
    values = {}
    for backend in EXACT_BACKENDS + [TORCH]:
        ar = backend.arith()
        values[backend.name] = backend.decode(op(ar, backend.encode(ar, a), backend.encode(ar, b)))
    reference = values["exact"]
    for backend in EXACT_BACKENDS:
        assert values[backend.name] == reference, (name, backend.name, a, b, values)
    # torch: on dyadic operands with 6 fractional bits every operation above is exact except a
    # division (div, safe_div, normalise), which IEEE 754 rounds correctly: float(exact) exactly
    torch_value = _torch_shape(values["torch"], reference)
    assert torch_value == _as_float(reference), (name, a, b, torch_value, reference)


@given(st.data())
@settings(max_examples=40, deadline=None)
def test_mass_ahead_agrees_in_every_backend(data):
    n = data.draw(st.integers(1, 5))
    key = tuple(data.draw(st.lists(st.sampled_from([Fraction(0), Fraction(1, 4), Fraction(1, 2), Fraction(1)]),
                                   min_size=n, max_size=n)))  # a coarse grid: ties are common
    weight = data.draw(st.one_of(dyadic(0, 1), st.lists(dyadic(0, 1), min_size=n, max_size=n).map(tuple)))
    values = {}
    for backend in EXACT_BACKENDS + [TORCH]:
        ar = backend.arith()
        values[backend.name] = backend.decode(ar.mass_ahead(backend.encode(ar, key), backend.encode(ar, weight)))
    for backend in EXACT_BACKENDS:
        assert values[backend.name] == values["exact"], (backend.name, key, weight, values)
    assert values["torch"] == _as_float(values["exact"])


@given(st.lists(dyadic(0, 1), min_size=3, max_size=3))
@settings(max_examples=60, deadline=None)
def test_log_comparisons_agree_in_every_backend(xs):
    """``log a + log b < log c`` and ``<=`` (``log 0 = -inf``) decided alike by exact, sympy and z3; torch
    agrees wherever the exact margin ``|log(ab) - log c|`` exceeds its rounding bound ``4 u (|log a| +
    |log b| + |log c|)`` (each log correctly rounded to within 1 ulp, one rounded addition)."""
    a, b, c = xs
    answers = {}
    for backend in [Backend("exact"), Backend("sympy"), Backend("z3"), TORCH]:
        ar = backend.arith()
        la, lb, lc = (ar.log(backend.encode(ar, v)) for v in (a, b, c))
        left = ar.add(la, lb)
        answers[backend.name] = (backend.decode(ar.lt(left, lc)), backend.decode(ar.le(left, lc)))
    truth = (a * b < c, a * b <= c)
    assert answers["exact"] == answers["sympy"] == answers["z3"] == truth
    if a and b and c:
        logs = [abs(math.log(v)) for v in (float(a), float(b), float(c))]
        margin = abs(math.log(float(a)) + math.log(float(b)) - math.log(float(c)))
        if a * b != c and margin > 4 * float(UNIT_ROUNDOFF) * sum(logs) + 1e-300:
            assert answers["torch"] == truth


@st.composite
def dyadic_laws(draw, n):
    """A law over ``n`` tokens with entries ``m / 2^6`` (zeros allowed)."""
    scale = 2**DYADIC_BITS
    cuts = sorted(draw(st.lists(st.integers(0, scale), min_size=n - 1, max_size=n - 1)))
    edges = [0] + cuts + [scale]
    return tuple(Fraction(edges[i + 1] - edges[i], scale) for i in range(n))


def _torch_step_bound(vocab: int) -> float:
    """Absolute error of a float64 step law on exact dyadic inputs, first order in ``u``.

    ``step_law`` rounds at most 12 times outside its two ``V``-term sums (each rounding of a value in
    ``[0, 1]`` moves it by at most ``u``; the acceptance ratio, its product with ``q``, ``1 - B``, the
    residual division, the product and the final sum, plus at most 6 in the rule's own ``A``/``w``),
    and each sum adds at most ``V u``: ``(2 V + 12) u``."""
    return float((2 * vocab + 12) * UNIT_ROUNDOFF)


REFUSALS = {("typical", "fast"), ("typical", "sympy"), ("typical", "z3")}
"""Rules a backend refuses with a TypeError (never a different value): the fast path has no logarithms;
sympy and z3 cannot sum logarithms (typical's entropy)."""


@given(st.data())
@settings(max_examples=30, deadline=None)
def test_every_catalogue_step_rule_agrees_in_every_backend(data):
    n = data.draw(st.integers(2, 4))
    p, q = data.draw(dyadic_laws(n)), data.draw(dyadic_laws(n))
    for rule in step_rules():
        reference = ExactArith()
        law = step_law(reference, rule, p, q)
        expected = {"accept": law.accept, "residual_weight": law.residual_weight, "output": law.output,
                    "acceptance_rate": law.acceptance_rate, "residual_mass": law.residual_mass}
        for backend in EXACT_BACKENDS[1:] + [TORCH]:
            ar = backend.arith()
            if (rule.name, backend.name) in REFUSALS:
                with pytest.raises(TypeError):
                    step_law(ar, rule, backend.encode(ar, p), backend.encode(ar, q))
                continue
            got = step_law(ar, rule, backend.encode(ar, p), backend.encode(ar, q))
            for field, want in expected.items():
                value = backend.decode(getattr(got, field))
                if backend is TORCH:
                    value = _torch_shape(value, want)
                    if rule.name == "typical":
                        continue  # a threshold on exp(-H(p)): float and exact may split at the threshold
                    want_f = _as_float(want)
                    if isinstance(want_f, tuple) and not isinstance(value, tuple):
                        value = (value,) * len(want_f)  # a constant acceptance broadcasts
                    pairs = zip(value, want_f) if isinstance(want_f, tuple) else [(value, want_f)]
                    bound = _torch_step_bound(n)
                    assert all(abs(v - w) <= bound for v, w in pairs), (rule.name, field, p, q, value, want)
                else:
                    assert value == want, (rule.name, backend.name, field, p, q)


@given(st.data())
@settings(max_examples=30, deadline=None)
def test_acceptance_tests_agree_in_every_backend(data):
    n = data.draw(st.integers(2, 4))
    p, q = data.draw(dyadic_laws(n)), data.draw(dyadic_laws(n))
    u = data.draw(dyadic(0, 1))
    for rule in step_rules():
        if rule.acceptance_test is None:
            continue
        answers = {}
        for backend in [Backend("exact"), Backend("sympy"), Backend("z3"), TORCH]:
            ar = backend.arith()
            answers[backend.name] = backend.decode(rule.acceptance_test(ar, backend.encode(ar, u),
                                                                        backend.encode(ar, p),
                                                                        backend.encode(ar, q)))
        assert answers["sympy"] == answers["exact"] == answers["z3"], rule.name
        if "log" not in rule.name:
            # u*q < p is exact on dyadics; u < p/q too: rounding is monotone and u is a float, so the
            # rounded ratio can only land on u if |p/q - u| < 1 ulp, but p/q - u != 0 has a
            # denominator below 2^18, far above an ulp (2^-52)
            assert answers["torch"] == answers["exact"], rule.name


def _evaluate(expr, env):
    """``expr`` at the point ``env``, deciding each Piecewise condition before evaluating its branch
    (``subs`` would evaluate ``p/q`` at ``q = 0`` in a branch that is not taken)."""
    if expr in env:
        return env[expr]
    if isinstance(expr, sympy.Piecewise):
        for value, cond in expr.args:
            if cond is sympy.true or bool(_evaluate(cond, env)):
                return _evaluate(value, env)
        raise AssertionError(f"no branch of {expr} holds")
    if isinstance(expr, sympy.ITE):
        cond, yes, no = expr.args
        return _evaluate(yes if bool(_evaluate(cond, env)) else no, env)
    if not expr.args:
        return expr
    return expr.func(*(_evaluate(a, env) for a in expr.args))


@given(st.data())
@settings(max_examples=30, deadline=None)
def test_generic_coordinates_agree_with_exact_at_a_concrete_point(data):
    """z3 and sympy generic coordinates (``total(p) = total(q) = 1``) give ``A(x)`` and ``w(x)`` the
    exact backend's values at a token of a concrete law pair - for every rule they can express."""
    n = data.draw(st.integers(2, 4))
    p, q = data.draw(dyadic_laws(n)), data.draw(dyadic_laws(n))
    x = data.draw(st.integers(0, n - 1))
    for rule in step_rules():
        exact = ExactArith()
        want = (rule.acceptance(exact, p, q)[x], rule.residual_weight(exact, p, q)[x])
        gz = GenericCoordinateArith()
        gs = SympyGenericCoordinate()
        try:
            z_terms = (rule.acceptance(gz, gz.p, gz.q), rule.residual_weight(gz, gz.p, gz.q))
        except TypeError:
            with pytest.raises(TypeError):
                rule.acceptance(gs, gs.p, gs.q), rule.residual_weight(gs, gs.p, gs.q)
            continue
        if gz.totals:  # sums other than sum p, sum q: not determined by the coordinate
            continue
        s_terms = (rule.acceptance(gs, gs.p, gs.q), rule.residual_weight(gs, gs.p, gs.q))
        sub_z = [(gz.p, gz.const(p[x])), (gz.q, gz.const(q[x]))]
        got_z = tuple(z3_fraction(z3.simplify(z3.substitute(gz._lift(t), *sub_z))) for t in z_terms)
        sub_s = {gs.p: sympy.Rational(p[x].numerator, p[x].denominator),
                 gs.q: sympy.Rational(q[x].numerator, q[x].denominator)}
        got_s = tuple(Backend("sympy").decode(_evaluate(sympy.sympify(t), sub_s)) for t in s_terms)
        assert got_z == want == got_s, rule.name


def test_sympy_generic_coordinate_sums_p_to_one_like_z3():
    """The disagreement issue 15 found: a plain SympyArith sums the scalar p_x to p_x."""
    gs, gz = SympyGenericCoordinate(), GenericCoordinateArith()
    assert gs.total(gs.p) == 1 and gs.total(gs.q) == 1
    assert z3.simplify(gz.total(gz.p) == 1)
    other = gs.total(gs.mul(gs.p, gs.q))
    assert isinstance(other, sympy.Symbol) and other != gs.p


@given(st.lists(dyadic(), min_size=1, max_size=5), st.lists(dyadic(), min_size=1, max_size=5))
@settings(max_examples=40, deadline=None)
def test_fast_identity_shortcuts_return_the_operand_and_keep_exact_values(xs, ys):
    """``v + 0``, ``0 + v``, ``v - 0`` and a one-sided ``select`` return the operand itself (no array
    pass), and every value still equals :class:`ExactArith`'s; ``p / q`` then ``q * (p / q)`` is ``p``."""
    n = min(len(xs), len(ys))
    xs, ys = tuple(xs[:n]), tuple(ys[:n])
    fast, exact, enc = FastExactArith(), ExactArith(), Backend("fast")
    v, w, zero = enc.encode(fast, xs), enc.encode(fast, ys), Fraction(0)
    assert fast.add(v, zero) is v and fast.add(zero, v) is v and fast.sub(v, zero) is v
    nowhere, everywhere = np.zeros(n, dtype=bool), np.ones(n, dtype=bool)
    assert fast.select(nowhere, v, w) is w and fast.select(everywhere, v, w) is v
    assert enc.decode(fast.sub(zero, v)) == exact.sub(zero, xs)  # 0 - v is a negation, no shortcut
    cond = tuple(x < y for x, y in zip(xs, ys))
    assert enc.decode(fast.select(np.array(cond), v, w)) == exact.select(cond, xs, ys)
    if all(y != 0 for y in ys):
        ratio = fast.div(v, w)
        assert enc.decode(ratio) == exact.div(xs, ys)
        assert enc.decode(fast.mul(w, ratio)) == xs  # the memoised cancellation q * (p/q) = p
        assert enc.decode(fast.safe_div(v, w, zero)) == exact.div(xs, ys)


# -- a traced graph: one meaning per operation, in every interpreter ---------------------------------

def _graph_function(fn):
    """``fn(ar, p, q)`` traced once (as a user rule is) and read back through the graph's wire form."""
    from specproof.proofs import StepRule
    from specproof.proofs.arith.graph import Graph
    from specproof.proofs.claims.opaque import trace_rule

    graph = trace_rule(StepRule("g", "exact", "", fn, lambda ar, p, q: p))
    return Graph.from_data(graph.as_data()).function("acceptance")


HUGE = 10**5000  # past Python's 4,300-digit int/str limit
GRAPH_CASES = {
    "total of a scalar is n times it": lambda ar, p, q: ar.add(p, ar.total(ar.const(Fraction(1, 4)))),
    "total of ar.one is n": lambda ar, p, q: ar.mul(q, ar.total(ar.one)),
    "total of a vector": lambda ar, p, q: ar.mul(p, ar.total(ar.mul(p, q))),
    "mass_ahead with a vector weight": lambda ar, p, q: ar.mass_ahead(p, q),
    "mass_ahead with a scalar weight (the rank)": lambda ar, p, q: ar.mass_ahead(q, ar.one),
    "safe_div where the divisor is 0": lambda ar, p, q: ar.safe_div(p, ar.sub(q, q), ar.const(Fraction(2, 7))),
    "safe_div": lambda ar, p, q: ar.safe_div(p, q, ar.const(Fraction(-1, 5))),
    "log: log p + log q < log 1/8": lambda ar, p, q: ar.select(
        ar.lt(ar.add(ar.log(p), ar.log(q)), ar.log(ar.const(Fraction(1, 8)))), ar.one, ar.zero),
    "log: log p <= log q, 0 included": lambda ar, p, q: ar.select(ar.le(ar.log(p), ar.log(q)), p, q),
    "constants over 4,300 digits": lambda ar, p, q: ar.mul(
        ar.safe_div(ar.mul(p, ar.const(HUGE)), ar.mul(ar.const(HUGE), ar.const(Fraction(3, 7))), ar.zero), q),
}
"""Each operation whose meaning the IR fixes (``total`` of a scalar, ``mass_ahead``, ``safe_div``,
``log``, exact constants of any size), as a small traced rule function."""


@pytest.mark.parametrize("case", sorted(GRAPH_CASES))
@given(data=st.data())
@settings(max_examples=15, deadline=None)
def test_a_traced_graph_means_the_same_in_every_interpreter(case, data):
    n = data.draw(st.integers(1, 4))
    p = tuple(data.draw(st.lists(dyadic(0, 1), min_size=n, max_size=n)))
    q = tuple(data.draw(st.lists(dyadic(0, 1), min_size=n, max_size=n)))
    function = _graph_function(GRAPH_CASES[case])
    values = {}
    exact = [b for b in EXACT_BACKENDS if not (b.name == "fast" and case.startswith("log"))]  # fast: no logs
    for backend in exact + ([] if "digits" in case else [TORCH]):  # torch floats cannot hold 10^5000
        ar = backend.arith()
        values[backend.name] = backend.decode(function(ar, backend.encode(ar, p), backend.encode(ar, q)))
    reference = values["exact"]
    for backend in exact:
        assert values[backend.name] == reference, (case, backend.name, p, q, values)
    if "total of" in case and "scalar" in case:
        assert reference == tuple(x + Fraction(n, 4) for x in p)
    if "digits" not in case:
        assert _torch_shape(values["torch"], reference) == _as_float(reference), (case, p, q, values["torch"])


def test_total_of_a_scalar_is_n_times_it_on_the_generic_coordinate_too():
    """On a generic coordinate (every-n proofs) the broadcast scalar's total is an abstract sum, never
    the scalar itself (the old tuple backends' reading of total(ar.one) as 1)."""
    function = _graph_function(lambda ar, p, q: ar.total(ar.one))
    generic = GenericCoordinateArith()
    total = function(generic, generic.p, generic.q)
    assert not z3.eq(z3.simplify(total), generic.const(1)) and generic.totals
