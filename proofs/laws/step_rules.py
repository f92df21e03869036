"""Verifier rules, each written once against :class:`~specproof.proofs.arith.interface.Arith`.

A *single-step rule* says, for a target law ``p`` and a draft law ``q`` over one vocabulary:

* ``acceptance(ar, p, q)`` - ``A(x)``, the probability that a drafted ``x`` is accepted;
* ``residual_weight(ar, p, q)`` - the unnormalised law the correction token is drawn from on
  rejection;
* ``acceptance_test(ar, u, p, q)`` - optionally, the predicate on a uniform ``u`` that a runtime
  evaluates (``u < p/q``, ``u*q < p``, ``log u + log q < log p``); for ``u ~ U[0, 1)`` its
  probability is ``A(x)``, but on a finite grid of uniforms the forms differ.

:func:`step_law` composes them into the implied output law, the same way for every rule::

    accepted_mass(x) = q(x) A(x)
    rejection        = 1 - sum_x q(x) A(x)
    residual         = w / sum w,     w = residual_weight(p, q)
    output(x)        = accepted_mass(x) + rejection * residual(x)

The canonical rule (Leviathan et al. 2023; Chen et al. 2023) has ``A = min(1, p/q)`` and
``w = max(0, p - q)``, and then ``output == p`` exactly (theorem T3 in the proofs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Literal

from specproof.proofs.arith.interface import Arith
from specproof.errors import SpecproofInputError

__all__ = [
    "StepRule",
    "StepLaw",
    "step_law",
    "canonical_acceptance",
    "canonical_residual_weight",
    "division_test",
    "multiplication_test",
    "log_test",
    "CANONICAL",
    "CANONICAL_MULTIPLICATION",
    "CANONICAL_LOG",
    "step_rules",
    "get_step_rule",
    "register_step_rule",
    "less_equal_test",
    "CANONICAL_LESS_EQUAL",
    "TYPICAL",
    "LENIENCE",
    "ENSEMBLE",
    "RESAMPLE_FROM_TARGET",
    "TOP_K_ACCEPT",
    "GREEDY",
    "typical_acceptance",
    "lenient_acceptance",
    "ensemble_acceptance",
    "top_k_acceptance",
    "greedy_indicator",
]

Claim = Literal["exact", "not-exact"]


@dataclass(frozen=True)
class StepRule:
    """One declarative record per single-step verifier rule."""

    name: str
    claim: Claim
    description: str
    acceptance: Callable[[Arith, Any, Any], Any]
    residual_weight: Callable[[Arith, Any, Any], Any]
    acceptance_test: Callable[[Arith, Any, Any, Any], Any] | None = None
    source: str = ""
    tags: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class StepLaw:
    """Every quantity of one verification step, in the backend's values."""

    accept: Any
    accepted_mass: Any
    acceptance_rate: Any
    rejection: Any
    residual_weight: Any
    residual_mass: Any
    residual: Any
    output: Any


def canonical_acceptance(ar: Arith, p: Any, q: Any) -> Any:
    """``A(x) = min(1, p(x)/q(x))``; ``A(x) = 0`` where ``q(x) = 0`` (never proposed; runtimes reject)."""
    return ar.minimum(ar.one, ar.safe_div(p, q, ar.zero))


def canonical_residual_weight(ar: Arith, p: Any, q: Any) -> Any:
    """``w(x) = max(0, p(x) - q(x))``."""
    return ar.relu(ar.sub(p, q))


def division_test(ar: Arith, u: Any, p: Any, q: Any) -> Any:
    """``u < p/q`` (vLLM v0, transformers uses ``<=``); ``q = 0`` never accepts."""
    return ar.select(ar.eq(q, ar.zero), ar.lt(u, ar.zero), ar.lt(u, ar.safe_div(p, q, ar.zero)))


def multiplication_test(ar: Arith, u: Any, p: Any, q: Any) -> Any:
    """``u * q < p`` (FlashInfer): no division."""
    return ar.lt(ar.mul(u, q), p)


def log_test(ar: Arith, u: Any, p: Any, q: Any) -> Any:
    """``log u + log q < log p`` (vLLM model runner v2)."""
    return ar.lt(ar.add(ar.log(u), ar.log(q)), ar.log(p))


def step_law(ar: Arith, rule: StepRule, p: Any, q: Any) -> StepLaw:
    """Compose ``rule`` into the law of one verification step (formulas in the module docstring)."""
    accept = rule.acceptance(ar, p, q)
    accepted_mass = ar.mul(q, accept)
    acceptance_rate = ar.total(accepted_mass)
    rejection = ar.sub(ar.one, acceptance_rate)
    weight = rule.residual_weight(ar, p, q)
    residual_mass = ar.total(weight)
    residual = ar.safe_div(weight, residual_mass, ar.zero)
    output = ar.add(accepted_mass, ar.mul(rejection, residual))
    return StepLaw(
        accept=accept,
        accepted_mass=accepted_mass,
        acceptance_rate=acceptance_rate,
        rejection=rejection,
        residual_weight=weight,
        residual_mass=residual_mass,
        residual=residual,
        output=output,
    )


CANONICAL = StepRule(
    name="canonical",
    claim="exact",
    description="accept w.p. min(1, p/q) (test u < p/q); on rejection sample norm(max(0, p - q))",
    acceptance=canonical_acceptance,
    residual_weight=canonical_residual_weight,
    acceptance_test=division_test,
    source="Leviathan, Kalman, Matias 2023; Chen et al. 2023",
)
CANONICAL_MULTIPLICATION = StepRule(
    name="canonical-mul",
    claim="exact",
    description="canonical rule with the division-free test u * q < p (FlashInfer)",
    acceptance=canonical_acceptance,
    residual_weight=canonical_residual_weight,
    acceptance_test=multiplication_test,
    source="FlashInfer chain_speculative_sampling",
)
CANONICAL_LOG = StepRule(
    name="canonical-log",
    claim="exact",
    description="canonical rule with the log-space test log u + log q < log p (vLLM model runner v2)",
    acceptance=canonical_acceptance,
    residual_weight=canonical_residual_weight,
    acceptance_test=log_test,
    source="vLLM model runner v2",
)

def less_equal_test(ar: Arith, u: Any, p: Any, q: Any) -> Any:
    """``u <= p/q`` (transformers): same measure as ``u < p/q`` on ``[0, 1)``, but ``u == 0`` accepts
    a token with ``p = 0`` on a finite grid of uniforms."""
    return ar.select(ar.eq(q, ar.zero), ar.lt(u, ar.zero), ar.le(u, ar.safe_div(p, q, ar.zero)))


CANONICAL_LESS_EQUAL = StepRule(
    name="canonical-le",
    claim="exact",
    description="canonical rule with the test u <= p/q (transformers)",
    acceptance=canonical_acceptance,
    residual_weight=canonical_residual_weight,
    acceptance_test=less_equal_test,
    source="transformers _speculative_sampling",
)

# -- approximate and incorrect single-step rules (algorithms.md sections 2, 5, 6) ------------------


def typical_acceptance(eps: Fraction, delta: Fraction) -> Callable[[Arith, Any, Any], Any]:
    """Medusa: ``A(x) = 1[p(x) > min(eps, delta exp(-H(p)))]``, in log space:
    ``p(x) > eps`` or ``log p(x) > log delta + sum_y p(y) log p(y)`` (``0 log 0 = 0``)."""
    def acceptance(ar: Arith, p: Any, q: Any) -> Any:
        log_p = ar.log(ar.select(ar.eq(p, ar.zero), ar.one, p))
        neg_entropy = ar.total(ar.mul(p, log_p))
        above_entropy = ar.gt(ar.log(p), ar.add(ar.log(ar.const(delta)), neg_entropy))
        passes = ar.select(ar.gt(p, ar.const(eps)), ar.one, ar.select(above_entropy, ar.one, ar.zero))
        return passes
    return acceptance


def lenient_acceptance(lenience: Fraction) -> Callable[[Arith, Any, Any], Any]:
    """Leviathan et al. lenience ``l``: ``A(x) = min(1, p(x) / (l q(x)))``."""
    def acceptance(ar: Arith, p: Any, q: Any) -> Any:
        return ar.minimum(ar.one, ar.safe_div(p, ar.mul(ar.const(lenience), q), ar.zero))
    return acceptance


def lenient_residual_weight(lenience: Fraction) -> Callable[[Arith, Any, Any], Any]:
    """``max(0, p - l q)``."""
    def weight(ar: Arith, p: Any, q: Any) -> Any:
        return ar.relu(ar.sub(p, ar.mul(ar.const(lenience), q)))
    return weight


def _ensemble(ar: Arith, p: Any, q: Any, w: Fraction) -> Any:
    return ar.add(ar.mul(ar.const(w), p), ar.mul(ar.const(1 - Fraction(w)), q))


def ensemble_acceptance(w: Fraction) -> Callable[[Arith, Any, Any], Any]:
    """Verify against ``v = w p + (1 - w) q``: ``A = min(1, v/q)``."""
    def acceptance(ar: Arith, p: Any, q: Any) -> Any:
        return canonical_acceptance(ar, _ensemble(ar, p, q, w), q)
    return acceptance


def ensemble_residual_weight(w: Fraction) -> Callable[[Arith, Any, Any], Any]:
    """``max(0, v - q) = w max(0, p - q)``: normalises to the canonical residual."""
    def weight(ar: Arith, p: Any, q: Any) -> Any:
        return canonical_residual_weight(ar, _ensemble(ar, p, q, w), q)
    return weight


def target_weight(ar: Arith, p: Any, q: Any) -> Any:
    """Resample from the raw target: ``w = p``."""
    return p


def top_k_acceptance(k: int) -> Callable[[Arith, Any, Any], Any]:
    """``A(x) = 1[x in top-k of p]`` (ties to the lower index)."""
    def acceptance(ar: Arith, p: Any, q: Any) -> Any:
        return ar.select(ar.lt(ar.mass_ahead(p, ar.one), ar.const(k)), ar.one, ar.zero)
    return acceptance


def greedy_indicator(ar: Arith, p: Any, q: Any) -> Any:
    """``1[x == argmax p]`` with ties to the lower index: the greedy acceptance and correction."""
    return ar.select(ar.eq(ar.mass_ahead(p, ar.one), ar.zero), ar.one, ar.zero)


TYPICAL = StepRule(
    name="typical",
    claim="not-exact",
    description="accept iff p(x) > min(eps, delta exp(-H(p))), eps=9/100, delta=3/10; else sample p",
    acceptance=typical_acceptance(Fraction(9, 100), Fraction(3, 10)),
    residual_weight=target_weight,
    source="Medusa typical acceptance (Cai et al. 2024)",
    tags=("approximate",),
)
LENIENCE = StepRule(
    name="lenience",
    claim="not-exact",
    description="accept w.p. min(1, p/(l q)), l=1/2; residual norm(max(0, p - l q)) (l=1 is canonical)",
    acceptance=lenient_acceptance(Fraction(1, 2)),
    residual_weight=lenient_residual_weight(Fraction(1, 2)),
    source="Leviathan, Kalman, Matias 2023, lenience",
    tags=("approximate",),
)
ENSEMBLE = StepRule(
    name="ensemble",
    claim="not-exact",
    description="verify against v = w p + (1-w) q, w=1/2: output law is v",
    acceptance=ensemble_acceptance(Fraction(1, 2)),
    residual_weight=ensemble_residual_weight(Fraction(1, 2)),
    source="transformers assistant_ensemble_weight",
    tags=("approximate",),
)
RESAMPLE_FROM_TARGET = StepRule(
    name="resample-from-target",
    claim="not-exact",
    description="accept w.p. min(1, p/q); on rejection sample raw p: P = min(p,q) + (1-beta) p",
    acceptance=canonical_acceptance,
    residual_weight=target_weight,
    source="incorrect variant (algorithms.md section 6)",
    tags=("incorrect",),
)
TOP_K_ACCEPT = StepRule(
    name="top-k-accept",
    claim="not-exact",
    description="accept iff x is in the target's top-k (k=1), else sample p",
    acceptance=top_k_acceptance(1),
    residual_weight=target_weight,
    source="incorrect variant (algorithms.md section 6)",
    tags=("incorrect",),
)
GREEDY = StepRule(
    name="greedy",
    claim="not-exact",
    description="accept iff x == argmax p, correct with argmax p: a greedy contract, not a sampling rule",
    acceptance=greedy_indicator,
    residual_weight=greedy_indicator,
    source="greedy verification (algorithms.md section 2)",
    tags=("greedy",),
)

_STEP_RULES: dict[str, StepRule] = {}


def register_step_rule(rule: StepRule) -> StepRule:
    """Add a rule to the catalogue; names are unique."""
    if not isinstance(rule, StepRule):
        raise SpecproofInputError("rule", f"{type(rule).__name__} is not a StepRule", "pass a StepRule(...)")
    if rule.name in _STEP_RULES:
        raise SpecproofInputError("rule", f"a step rule named {rule.name!r} is already registered", "pick another name")
    if rule.claim not in ("exact", "not-exact"):
        raise SpecproofInputError("rule.claim", f"{rule.claim!r} is not 'exact' or 'not-exact'", "use one of those")
    _STEP_RULES[rule.name] = rule
    return rule


for _rule in (CANONICAL, CANONICAL_MULTIPLICATION, CANONICAL_LOG, CANONICAL_LESS_EQUAL, TYPICAL, LENIENCE,
              ENSEMBLE, RESAMPLE_FROM_TARGET, TOP_K_ACCEPT, GREEDY):
    register_step_rule(_rule)


def step_rules() -> tuple[StepRule, ...]:
    """All registered single-step rules, in registration order."""
    return tuple(_STEP_RULES.values())


def get_step_rule(name: str | StepRule) -> StepRule:
    """Look a rule up by name (a StepRule passes through)."""
    if isinstance(name, StepRule):
        return name
    try:
        return _STEP_RULES[name]
    except KeyError:
        known = ", ".join(sorted(_STEP_RULES))
        raise SpecproofInputError("rule", f"unknown step rule {name!r}", f"choose one of: {known}") from None
