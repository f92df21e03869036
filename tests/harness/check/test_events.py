"""harness/check/events.py: the later-token family's exact expectations and what it catches."""

import numpy as np
import pytest

from specproof.harness.check.events import build_families
from specproof.harness.check.runner import check_verifier
from specproof.harness.check.scenarios import default_suite
from specproof.impls import get


def _scenario(name):
    return next(s for s in default_suite() if s.name == name)


@pytest.mark.parametrize("name", ["runtime-style context-free", "prefix-dependent V3 K3", "large vocabulary V1000 K4"])
def test_later_token_events_are_sums_of_full_length_prefix_events(name):
    """Each event is a union of full-length continued sequences: its expectation is their summed exact
    probability, and each position's single-class events sum to 1."""
    real = _scenario(name).realise("float32", "cpu")
    fams = {f.name: f for f in build_families(real)}
    later, lossless = fams["later-token"], fams["lossless"]
    c, k = real.classes, real.k
    singles = [i for i, n in enumerate(later.names) if n.count(",") == 0]
    assert len(singles) == k * c
    for j in range(k):
        block = [i for i in singles if later.positions[i] == j + 2]
        assert len(block) == c
        assert later.expected[block].sum() == pytest.approx(1.0, abs=1e-12)
        assert later.matrix[:, block].sum(axis=1) == pytest.approx(np.ones(lossless.n_keys), abs=1e-9)
    assert ((later.matrix >= 0) & (later.matrix <= 1)).all()


def test_a_bonus_only_bug_is_flagged_by_the_token_at_its_position():
    """min-p applied to the bonus draw alone changes only the (K+1)-th token's law: the later-token
    event at that position is the first finding in the runtime-style scenario."""
    suite = [_scenario("runtime-style context-free")]
    result = check_verifier(get("min-p-bonus-only").fn, scenarios=suite, fail_fast=True, seed=0, inject=False,
                            progress=False)
    assert result.findings
    first = max(result.findings, key=lambda f: f.statistic)
    assert first.family == "later-token" and first.position == suite[0].realise("float32", "cpu").k + 1
    assert result.rows <= 1024
