"""Rules that step outside the Arith interface or misbehave: each is a usage error (exit 2), never a
verdict, a traceback or exit 1."""

import os
from fractions import Fraction

from specproof.proofs import StepRule
from specproof.proofs.laws.step_rules import canonical_acceptance as canonical_a
from specproof.proofs.laws.step_rules import canonical_residual_weight as canonical_w


def _rule(name, acceptance=canonical_a, residual_weight=canonical_w, test=None):
    return StepRule(name=name, claim="exact", description="golden misuse", acceptance=acceptance,
                    residual_weight=residual_weight, acceptance_test=test)


def _tuple_trick(ar, p, q):
    if isinstance(p, tuple) and len(p) >= 5:
        return p
    return canonical_w(ar, p, q)


def _raises_from_v4(ar, p, q):
    if len(p) >= 4:
        raise RuntimeError("too many tokens")
    return canonical_w(ar, p, q)


def _caught(ar, p, q):
    try:
        len(p)
    except Exception:
        pass
    return canonical_w(ar, p, q)


def _branch(ar, p, q):
    if ar.lt(p, q):
        return p
    return q


def _exits(ar, p, q):
    raise SystemExit(3)


def _dies(ar, p, q):
    os._exit(7)


def _negative_log(ar, p, q):
    """A logarithm of a number that is negative only near p(x) = 1/7, off every search grid: z3 alone
    would read log(-x) as the ordering of -x; the log-argument obligation finds the point."""
    d = ar.sub(p, ar.const(Fraction(1, 7)))
    below = ar.lt(ar.log(ar.sub(ar.mul(d, d), ar.const(Fraction(1, 10**6)))), ar.log(ar.zero))
    return ar.select(below, p, canonical_w(ar, p, q))


tuple_trick = _rule("m-tuple-trick", residual_weight=_tuple_trick)
divides = _rule("m-divides", acceptance=lambda ar, p, q: ar.div(p, ar.maximum(p, q)))
condition = _rule("m-condition", acceptance=lambda ar, p, q: ar.lt(q, p))
plain_fraction = _rule("m-plain-fraction", acceptance=lambda ar, p, q: Fraction(1, 2) * p)
raises_from_v4 = _rule("m-raises-from-v4", residual_weight=_raises_from_v4)
returns_list = _rule("m-returns-list", residual_weight=lambda ar, p, q: [p, q])
python_min = _rule("m-python-min", acceptance=lambda ar, p, q: min(ar.one, ar.safe_div(p, q, ar.zero)))
exits = _rule("m-exits", acceptance=_exits)
dies = _rule("m-dies", residual_weight=_dies)
bool_branch = _rule("m-bool-branch", acceptance=_branch)
caught = _rule("m-caught", residual_weight=_caught)
float_constant = _rule("m-float-constant", acceptance=lambda ar, p, q: ar.const(0.5))
iterates = _rule("m-iterates", residual_weight=lambda ar, p, q: sum(p))
test_returns_number = _rule("m-test-returns-number", test=lambda ar, u, p, q: canonical_a(ar, p, q))
backend_attribute = _rule("m-backend-attribute", acceptance=lambda ar, p, q: ar.ctx)
negative_log = _rule("m-negative-log", residual_weight=_negative_log)
clash = _rule("canonical")
