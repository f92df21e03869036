"""Verifier rules, each written once against :class:`~specproof.proofs.arith.Arith`.

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
from typing import Any, Callable, Literal

from .arith import Arith

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

_STEP_RULES: dict[str, StepRule] = {}


def register_step_rule(rule: StepRule) -> StepRule:
    """Add a rule to the catalogue; names are unique."""
    if not isinstance(rule, StepRule):
        raise TypeError(f"rule must be a StepRule, got {type(rule).__name__}")
    if rule.name in _STEP_RULES:
        raise ValueError(f"rule: a step rule named {rule.name!r} is already registered - pick another name")
    if rule.claim not in ("exact", "not-exact"):
        raise ValueError(f"rule.claim: {rule.claim!r} is not 'exact' or 'not-exact'")
    _STEP_RULES[rule.name] = rule
    return rule


for _rule in (CANONICAL, CANONICAL_MULTIPLICATION, CANONICAL_LOG):
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
        raise ValueError(f"rule: unknown step rule {name!r} - choose one of: {known}") from None
