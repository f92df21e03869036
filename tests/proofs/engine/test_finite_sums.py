"""The sum facts are proved by induction on n, and the checks can fail: without their premise, or on
a wrong level step, the same z3 checks are refuted."""

import z3

from specproof.proofs.engine.every_size import GenericCoordinateArith
from specproof.proofs.engine.finite_sums import _Sums, linearity, monotonicity, sum_step
from specproof.proofs.laws.multidraft import rrs_level
from specproof.proofs.engine.results import Basis, Verdict
from specproof.proofs.laws.step_rules import CANONICAL, step_law
from specproof.proofs.engine.solvers import check_z3


def test_linearity_and_monotonicity_are_proved_for_every_n():
    for terms in (1, 2, 3):
        o = linearity(terms)
        assert o.verdict == Verdict.PROVED and o.basis == Basis.MACHINE, o.detail
        assert "base n=0: PROVED" in o.detail and "step n -> n+1: PROVED" in o.detail
    assert monotonicity().verdict == Verdict.PROVED
    names = [o.name for o in sum_step("X", "s", "P", monotone=True)]
    assert names == ["X (linearity)", "X (monotonicity)"]


def test_the_induction_step_needs_its_premises():
    z = _Sums()
    f, s_f = z.sequence("f")
    g, s_g = z.sequence("g")
    defs = z.definition(f, s_f) + z.definition(g, s_g)
    # linearity without the pointwise identity f = 2 g: refuted
    step = check_z3("step", "", z.ar, defs + [z.n >= 0, s_f(z.n) == 2 * s_g(z.n)], s_f(z.n + 1) == 2 * s_g(z.n + 1))
    assert step.verdict == Verdict.REFUTED
    # monotonicity without f >= 0: refuted
    claim = s_f(z.n + 1) >= 0
    assert check_z3("step", "", z.ar, defs + [z.n >= 0, s_f(z.n) >= 0], claim).verdict == Verdict.REFUTED


def test_the_rrs_level_step_is_checked_on_the_real_level_function():
    gar = GenericCoordinateArith()
    domain = [gar.p >= 0, gar.p <= 1, gar.q >= 0, gar.q <= 1]
    step = step_law(gar, CANONICAL, gar.p, gar.q).output
    right = rrs_level(gar, gar.p, gar.q, lambda r_next, q_next: r_next, replacement=True)
    assert check_z3("ok", "", gar, domain, right == step).verdict == Verdict.PROVED
    wrong = rrs_level(gar, gar.p, gar.q, lambda r_next, q_next: q_next, replacement=True)
    assert check_z3("wrong", "", gar, domain, wrong == step).verdict == Verdict.REFUTED


def test_generic_coordinate_gives_one_sum_per_distinct_summand():
    gar = GenericCoordinateArith()
    a = gar.total(gar.mul(gar.p, gar.q))
    b = gar.total(gar.mul(gar.p, gar.q))
    c = gar.total(gar.add(gar.p, gar.q))
    assert z3.eq(a, b) and not z3.eq(a, c)


def test_support_fact_and_its_premise():
    from specproof.proofs.engine.finite_sums import support

    assert support().verdict == Verdict.PROVED
    z = _Sums()
    f, s_f = z.sequence("f")
    g, s_g = z.sequence("g")
    defs = z.definition(f, s_f) + z.definition(g, s_g)
    nonneg = z.everywhere(lambda i: z3.And(f(i) >= 0, g(i) >= 0))  # no "f > 0 => g > 0": refuted
    claim = lambda m: z3.And(s_g(m) >= 0, z3.Implies(s_f(m) > 0, s_g(m) > 0))  # noqa: E731
    assert check_z3("step", "", z.ar, defs + [nonneg, z.n >= 0, claim(z.n)], claim(z.n + 1)).verdict == Verdict.REFUTED


def test_processor_both_sides_scopes():
    from specproof.proofs.claims.pipeline import Settings
    from specproof.proofs.claims.structured import prove_processor_both_sides

    temperature = prove_processor_both_sides(Settings(), "temperature-half")
    assert temperature.verdict == Verdict.PROVED and temperature.n.startswith("all")
    assert any(o.name == "P law (every n)" and o.basis == Basis.MACHINE for o in temperature.obligations)
    for name in ("top-k-2", "top-p-half"):
        top = prove_processor_both_sides(Settings(), name)
        assert top.verdict == Verdict.PROVED and top.n.startswith("all")
        assumed = [o for o in top.obligations if o.basis == Basis.ASSUMPTION]
        assert [o.name for o in assumed] == ["P argmax"] and "order theory" in assumed[0].source
        assert any("assumption: P argmax" in note for note in top.notes)


def test_spectr_is_proved_for_every_k_on_its_own_loop_and_composition():
    from specproof.proofs.claims.pipeline import Settings
    from specproof.proofs.claims.structured import prove_spectr

    result = prove_spectr(Settings())
    by_name = {o.name: o for o in result.obligations}
    assert result.verdict == Verdict.PROVED and result.n.startswith("all n, k")
    for name in ("K6 draft loop (every k)", "K7 composition (every n, k)"):
        assert by_name[name].verdict == Verdict.PROVED and by_name[name].basis == Basis.MACHINE
    assert all(o.basis == Basis.BOUNDED for n, o in by_name.items() if n.startswith(("K4", "K5")))


def test_a_wrong_spectr_composition_is_refuted():
    gar = GenericCoordinateArith()
    p, q = gar.p, gar.q
    rho, reach, none = gar.real("rho"), gar.real("reach"), gar.real("none")
    m = gar.minimum(q, gar.div(p, rho))
    residual = gar.safe_div(gar.sub(p, gar.mul(m, reach)), none, gar.zero)
    wrong = gar.add(gar.mul(m, reach), residual)  # forgets the factor none = P(no draft accepted)
    facts = [p >= 0, p <= 1, q >= 0, q <= 1, rho >= 1, none >= 0, none <= 1]
    assert check_z3("wrong", "", gar, facts, wrong == p).verdict == Verdict.REFUTED
