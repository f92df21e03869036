"""Golden attacks on the prover itself, one per class (issue 40): each came out PROVED, or crashed the
tool, when the rule's code ran once per engine.  A rule now runs once, traced, in a child process;
each of these is REFUTED (what it really computes is proved wrong) or refused (exit 2)."""

import sys
from fractions import Fraction

from specproof.proofs import StepRule
from specproof.proofs.laws.step_rules import canonical_acceptance as canonical_a
from specproof.proofs.laws.step_rules import canonical_residual_weight as canonical_w


def _rule(name, acceptance=canonical_a, residual_weight=canonical_w, test=None):
    return StepRule(name=name, claim="exact", description="golden attack", acceptance=acceptance,
                    residual_weight=residual_weight, acceptance_test=test)


def division_test(ar, u, p, q):
    return ar.select(ar.eq(q, ar.zero), ar.lt(u, ar.zero), ar.lt(u, ar.safe_div(p, q, ar.zero)))


def _sniffing_test(ar, u, p, q):
    """Backend sniffing through errors: an operation that once failed in one engine only (a constant
    over 4,300 digits in z3, ordering in sympy) decided which test an engine saw."""
    try:
        ar.mass_ahead(p, p)
        ar.mul(ar.const(10**5000), u)
    except Exception:
        return division_test(ar, u, p, q)  # what the solvers used to see
    return ar.lt(u, p)  # what the exact engine used to see: wrong at n = 2, TV 1/9


def _reaches_value(ar, p, q):
    """Reaching into an opaque value (``Value._value`` rebuilt the tuple trick in one line)."""
    inner = p._value
    return p if isinstance(inner, tuple) and len(inner) >= 5 else canonical_w(ar, p, q)


def _reaches_backend(ar, p, q):
    """Reaching into the Arith (``OpaqueArith._inner`` was a plain attribute)."""
    return p if type(ar._inner).__name__ == "ExactArith" else canonical_w(ar, p, q)


class _Half(Fraction):
    """A constant subclass: stores 1/2 but says it is 1 to anything that asks through its methods."""

    @property
    def numerator(self):
        return 1

    @property
    def denominator(self):
        return 1

    def __lt__(self, other):
        return False


def _inspects_stack(ar, p, q):
    """Stack inspection: which engine called me?"""
    caller = sys._getframe(2).f_code.co_filename
    return p if "counterexamples" in caller else canonical_w(ar, p, q)


sniffs_errors = _rule("a-sniffs-errors", test=_sniffing_test)
reaches_value = _rule("a-reaches-value", residual_weight=_reaches_value)
reaches_backend = _rule("a-reaches-backend", residual_weight=_reaches_backend)
constant_subclass = _rule("a-constant-subclass", acceptance=lambda ar, p, q: ar.minimum(
    ar.const(_Half(1, 2)), ar.safe_div(p, q, ar.zero)))  # proved as the 1/2 it stores: lenient, wrong
inspects_stack = _rule("a-inspects-stack", residual_weight=_inspects_stack)
