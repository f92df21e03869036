"""Verdicts: assumptions are checked first, unknown is never proved, sympy case splits can fail."""

import sympy
import z3

from specproof.proofs import SympyArith, Verdict, Z3Arith
from specproof.proofs.engine.results import combine, exact_json
from specproof.proofs.engine.solvers import check_z3, prove_by_cases
from fractions import Fraction


def test_unsatisfiable_assumptions_are_vacuous_not_proved():
    ar = Z3Arith()
    x = ar.real("x")
    check = check_z3("vacuous", "", ar, [x > 1, x < 0], x == 5)
    assert check.verdict == Verdict.VACUOUS
    assert prove_by_cases("vacuous", "", sympy.Symbol("x"), [sympy.Symbol("x") > 1, sympy.Symbol("x") < 0]
                          ).verdict == Verdict.VACUOUS


def test_resource_limit_gives_inconclusive_with_the_reason():
    ar = Z3Arith()
    xs = ar.vector("x", 6)
    goal = z3.Sum([x * x * x for x in xs]) >= z3.Product(xs) * 0
    check = check_z3("hard", "", ar, [x >= 0 for x in xs], goal, rlimit=1)
    assert check.verdict in (Verdict.INCONCLUSIVE, Verdict.PROVED)
    if check.verdict == Verdict.INCONCLUSIVE:
        assert "rlimit 1" in check.obligation.detail or "unknown" in check.obligation.detail
    assert combine([Verdict.PROVED, Verdict.INCONCLUSIVE]) == Verdict.INCONCLUSIVE


def test_false_statement_is_refuted_with_a_model():
    ar = Z3Arith()
    p, q = ar.real("p"), ar.real("q")
    check = check_z3("false", "", ar, [p >= 0, q >= 0], ar.minimum(p, q) == p)
    assert check.verdict == Verdict.REFUTED and check.model is not None


def test_sympy_case_split_proves_t1_and_refutes_a_wrong_variant():
    ar = SympyArith()
    p, q = sympy.symbols("p q", real=True)
    ok = prove_by_cases("T1", "", ar.add(ar.minimum(p, q), ar.relu(ar.sub(p, q))) - p, [])
    assert ok.verdict == Verdict.PROVED and "cases" in ok.detail
    wrong = prove_by_cases("wrong", "", ar.add(ar.minimum(p, q), ar.relu(ar.sub(q, p))) - p, [])
    assert wrong.verdict == Verdict.REFUTED


def test_exact_json_writes_num_den_strings():
    assert exact_json((Fraction(1, 3), 1)) == ["1/3", "1/1"]
    assert exact_json({(0, 1): Fraction(2, 5), (): Fraction(0)}) == {"0,1": "2/5", "": "0/1"}
