"""The rules that implementations claim to implement, named once (rule metadata for impls and harness).

Every implementation record (:mod:`specproof.impls.registry`) names the rule whose exact law it
should emit; the harness measures it against that law.  Those names are the proofs' own: the single
step rules of :mod:`.step_rules` that runtimes ship, block verification (:mod:`.block`) and recursive
rejection sampling with replacement over k drafts (:mod:`.multidraft`, catalogue entry
``rrs-with-replacement``), which runtimes call ``multidraft-rrs``.  The three canonical variants differ
only in how the acceptance test compares ``u`` (``u < p/q``, ``u*q < p``, ``log u + log q < log p``):
that is their comparison *form*.
"""

from __future__ import annotations

from types import MappingProxyType

from specproof.proofs.laws.step_rules import (CANONICAL, CANONICAL_LESS_EQUAL, CANONICAL_LOG,
                                              CANONICAL_MULTIPLICATION, GREEDY, RESAMPLE_FROM_TARGET,
                                              TOP_K_ACCEPT)

__all__ = ["IMPLEMENTED_STEP_RULES", "BLOCK_RULE", "MULTIDRAFT_RULE", "IMPLEMENTED_RULES", "FORM_OF_RULE",
           "RULE_OF_FORM"]

IMPLEMENTED_STEP_RULES: tuple[str, ...] = tuple(r.name for r in (
    CANONICAL, CANONICAL_MULTIPLICATION, CANONICAL_LOG, CANONICAL_LESS_EQUAL, GREEDY, RESAMPLE_FROM_TARGET,
    TOP_K_ACCEPT))
"""Single-step rules (:mod:`.step_rules`) that implementations implement, known-bad ones included."""

BLOCK_RULE = "block"
MULTIDRAFT_RULE = "multidraft-rrs"

IMPLEMENTED_RULES: tuple[str, ...] = (*IMPLEMENTED_STEP_RULES[:5], BLOCK_RULE, MULTIDRAFT_RULE,
                                      *IMPLEMENTED_STEP_RULES[5:])
"""Every rule an implementation record may name (the registry's order)."""

FORM_OF_RULE = MappingProxyType({CANONICAL.name: "ratio", CANONICAL_MULTIPLICATION.name: "product",
                                 CANONICAL_LOG.name: "log"})
"""The acceptance comparison of each canonical variant."""

RULE_OF_FORM = MappingProxyType({form: rule for rule, form in FORM_OF_RULE.items()})
