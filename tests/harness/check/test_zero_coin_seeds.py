"""The ``<=``-for-``<`` acceptance mutants of the batched and generate contracts FAIL on every seed (slow):
a zero coin meets a draftable token of target probability 0 in their injection scenarios."""

from __future__ import annotations

import pytest

from specproof.harness.check.driver import check
from specproof.harness.check.result import Verdict
from specproof.impls.pipelines.mutants import accept_le_generate
from specproof.impls.zoo import le_ratio_invcdf


def zero_coin_verdicts(fn, contract: str, seeds: range) -> list[Verdict]:
    return [check(fn, contract, seed=seed, fail_fast=True, progress=False).verdict for seed in seeds]


@pytest.mark.slow
@pytest.mark.parametrize("fn, contract", [(le_ratio_invcdf, "batched"), (accept_le_generate, "generate")],
                         ids=["batched", "generate"])
def test_the_le_mutant_fails_on_50_of_50_seeds(fn, contract):
    verdicts = zero_coin_verdicts(fn, contract, range(50))
    assert verdicts == [Verdict.FAIL] * 50
