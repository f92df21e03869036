"""The exact law of an acceptance test is computed on the whole laws, so vocabulary sums and ranks in a
test mean at proof time what they mean at run time (a per-token evaluation read ``total(v)`` as ``v(x)``
and refuted an exact rule)."""

from fractions import Fraction as F

from specproof.proofs.engine.acceptance_law import running_rule
from specproof.proofs.engine.acceptance_law import test_probability as law_of_test
from specproof.proofs.laws.step_rules import CANONICAL, get_step_rule, step_law
from specproof.proofs.arith.exact import ExactArith


def sum_guarded_test(ar, u, p, q):
    """``u*q < p`` whenever ``sum_y (q(y) + 1) >= 2`` (always: it is ``1 + n``), else a halved test."""
    always = ar.le(ar.const(2), ar.total(ar.add(q, ar.one)))
    return ar.select(always, ar.lt(ar.mul(u, q), p), ar.lt(ar.mul(ar.mul(u, ar.const(2)), q), p))


def rank_touching_test(ar, u, p, q):
    """``u*q < p + 0 * mass_ahead(q)``: a rank over the vocabulary that changes nothing."""
    return ar.lt(ar.mul(u, q), ar.add(p, ar.mul(ar.zero, ar.mass_ahead(q, ar.one))))


def test_a_vocabulary_sum_in_the_test_is_the_sum_over_tokens():
    p, q = (F(1, 3), F(2, 3)), (F(2, 3), F(1, 3))
    assert law_of_test(sum_guarded_test, p, q) == (F(1, 2), F(1))  # min(1, p/q), not (1/4, 1)


def test_a_rank_in_the_test_is_interpretable_and_exact():
    p, q = (F(1, 5), F(3, 10), F(1, 2)), (F(1, 2), F(1, 5), F(3, 10))
    assert law_of_test(rank_touching_test, p, q) == (F(2, 5), F(1), F(1))


def test_the_running_rule_of_an_exact_test_reproduces_the_target():
    import dataclasses

    rule = dataclasses.replace(get_step_rule(CANONICAL), name="sum-guarded", acceptance_test=sum_guarded_test)
    p, q = (F(1, 3), F(2, 3)), (F(2, 3), F(1, 3))
    assert step_law(ExactArith(), running_rule(rule), p, q).output == p


def test_tokens_the_draft_never_proposes_get_probability_zero():
    assert law_of_test(sum_guarded_test, (F(1, 2), F(1, 2)), (F(1), F(0))) == (F(1, 2), F(0))
