"""Golden attack: code at import that patches the prover (a raw-p rule once came out PROVED after
``pipeline.decide`` was replaced).  The file is imported only in a child, and the import is refused."""

import specproof.proofs.claims.pipeline as pipeline
from specproof.proofs import StepRule
from specproof.proofs.laws.step_rules import canonical_acceptance

pipeline.decide = None  # noqa: the attack

patched = StepRule(name="a-patched-decide", claim="exact", description="golden attack",
                   acceptance=canonical_acceptance, residual_weight=lambda ar, p, q: p)
