"""--vocab: validation, tiled scenarios at a runtime's V, position events, the sizes a verdict states."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from specproof.errors import SpecproofInputError
from specproof.harness.check.contracts.batched.families import build_families
from specproof.harness.check.contracts.batched.scenarios import default_suite
from specproof.harness.check.contracts.batched.tiled import tiled_probe, tiled_scenario
from specproof.harness.check.events.positions import POSITION_FAMILY, position_family
from specproof.harness.check.options import CheckOptions
from specproof.harness.check.result import vocab_text
from specproof.harness.check.vocab import MAX_VOCAB, RUNTIME_PROBE_VOCAB, vocab_sizes


def test_vocab_sizes_sorted_distinct_and_parsed():
    assert vocab_sizes([151936, "131072", 131072, np.int64(5000)]) == (5000, 131072, 151936)
    assert vocab_sizes("32000,131072") == (32000, 131072)
    assert CheckOptions.build(vocab=[151936]).vocab == (151936,)


@pytest.mark.parametrize("bad, words", [([], "names no"), ([1], "below 2"), ([MAX_VOCAB + 1], "2^24"),
                                        (["x"], "whole number"), ([True], "whole number"), (2.5, "not a vocabulary")])
def test_bad_vocab_names_the_argument_and_the_fix(bad, words):
    with pytest.raises(SpecproofInputError) as err:
        CheckOptions.build(vocab=bad)
    assert err.value.argument == "vocab" and words in str(err.value)


def test_vocab_is_a_batched_option():
    with pytest.raises(SpecproofInputError, match="batched contract only"):
        CheckOptions.build("tree", vocab=[5000])


def test_cli_names_the_flag(capsys):
    from specproof.harness.cli import main

    assert main(["check", "specproof.impls:canonical_ratio_race", "--vocab", "0", "--quiet"]) == 2
    assert "--vocab" in capsys.readouterr().err


@pytest.mark.parametrize("vocab", [40000, 131072, 151936])
def test_tiled_scenario_places_mass_in_tiles_above_2_15_2_16_and_the_last_partial_tile(vocab):
    scenario = tiled_scenario(vocab)
    p, q = scenario.target[0, 0], scenario.draft[0, 0]
    assert scenario.vocab == vocab and scenario.k == 1
    assert p.sum() == 1.0 and q.sum() == 1.0  # exact: whole multiples of 2^-18
    assert np.all(p * 2**18 == np.round(p * 2**18))
    ids = np.flatnonzero(p)
    assert (ids >= 1 << 15).any() and (p[vocab - 1] > 0 or p[(vocab - 1) // 4096 * 4096] > 0
                                          or p[(vocab - 1) // 4096 * 4096 + 1] > 0)
    if vocab > 1 << 16:
        assert (ids > 1 << 16).any()
    for block in (1024, 4096, 65536):
        tiles = {int(i) // block for i in ids}
        assert len(tiles) >= 3 or block * 3 > vocab  # several tiles of every block
    assert (p > 0).sum() < 6144 + 256  # sparse: the tail's 6,144 tokens and the anchors, whatever V
    residual = np.maximum(p - q, 0)
    assert (residual > 0).sum() > 6 * 1024  # six times the residual entries a top-1,024 keeps


def test_position_family_is_exact_and_budgeted():
    scenario = tiled_scenario(40000)
    real = scenario.realise("float32")
    families = build_families(real)
    family = next(f for f in families if f.name == POSITION_FAMILY)
    row = real.rounded.exact_row("target", (0, 0))
    # each event's expected value is the exact sum of p over its tokens: check through the keys
    tokens = np.arange(real.vocab)
    keys = family.key(np.stack([tokens, np.full_like(tokens, -1)], axis=1))
    for e in range(family.size):
        members = np.flatnonzero(family.matrix[keys, e] == 1.0)
        exact = sum((row[v] for v in members), Fraction(0))
        assert float(exact) == pytest.approx(family.expected[e], abs=0)
        assert 0 < exact < 1
    assert any("32768" in n for n in family.names)  # ">= 2^15", or the tile of block 32768 it equals here
    assert any("partial" in n for n in family.names)
    from specproof.harness.check.stats.engine import alpha_shares

    class Stream:
        name, vocab, k, tolerance = scenario.name, real.vocab, real.k, 1e-6

    Stream.families = families
    shares = alpha_shares([Stream], 1e-6)
    total = sum(float(np.exp(-t[np.isfinite(t)]).sum()) for per in shares for pair in per for t in pair)
    assert total <= 1e-6 * (1 + 1e-9)  # the position events spend their share of the one alpha
    index = [f.name for f in families].index(POSITION_FAMILY)
    assert np.isfinite(shares[0][index][0]).any()


def test_no_position_family_below_one_block():
    assert position_family([Fraction(1, 1000)] * 1000) is None
    assert all(f.name != POSITION_FAMILY for f in build_families(default_suite(vocab=())[-1].realise("float32")))


def test_default_suite_adds_one_tiled_scenario_per_size():
    base = default_suite(vocab=())
    both = default_suite(vocab=[40000, 5000])
    assert [s.name for s in both[len(base):]] == ["tiled V5000 K1", "tiled V40000 K1"]
    assert not any(s.certainty_probe for s in both[len(base):])


def test_the_default_suite_ends_with_the_runtime_sized_probe():
    """Without --vocab the batched suite holds the tiled rows at V = 151,936 as a certainty probe (its
    statistical events are --vocab's); naming sizes replaces it with the statistical scenarios."""
    base = default_suite(vocab=())
    suite = default_suite()
    assert suite[:-1] == base and suite[-1] is tiled_probe() is default_suite()[-1]
    probe = suite[-1]
    assert probe.vocab == RUNTIME_PROBE_VOCAB == 151936 and probe.certainty_probe
    assert np.array_equal(probe.target, tiled_scenario(151936).target)
    assert build_families(probe.realise("float32")) == []  # impossible outcomes only
    assert tiled_probe() not in default_suite(vocab=[151936])


def test_vocab_text_states_every_size():
    assert vocab_text([2, 4, 1000, 151936]) == "V = 2..1000, 151936"
    assert vocab_text([151936]) == "V = 151936"
    assert vocab_text([2, 1000, 131072, 151936], [151936]) == \
        "V = 2..1000, 131072, 151936 (impossible outcomes only)"


def test_a_tile_local_index_fails_the_default_suite_at_its_runtime_probe():
    """A bug that emits a token of target probability 0 at V = 151,936 is a certain FAIL of the default
    batched suite (exact at V <= 4,096, so no small scenario sees it); a correct tiled verifier's verdict line
    says which size was judged for impossible outcomes only."""
    from specproof.harness.check.driver import check
    from specproof.impls.verifiers.tiled import tiled_ratio_invcdf
    from specproof.impls.verifiers.tiled_mutants import tiled_local_index

    bad = check(tiled_local_index, scenarios=[default_suite()[1], tiled_probe()], inject=False, progress=False,
                fail_fast=True)
    assert bad.verdict.value == "fail" and bad.findings[0].certain
    assert bad.findings[0].scenario == tiled_probe().name
    good = check(tiled_ratio_invcdf, scenarios=[default_suite()[1], tiled_probe()], inject=False, progress=False)
    assert good.verdict.value == "pass"
    assert "V = 6, 151936 (impossible outcomes only)" in good.summary().splitlines()[0]
    assert good.as_json()["vocab_sizes_impossible_only"] == [151936]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_band_of_a_sparse_tiled_row_is_that_of_its_support(dtype):
    """A zero adds, and a zero weight is drawn, exactly: the null band's V is the scenario's support (the
    tokens some row gives positive probability), so a runtime-sized sparse row can PASS in float32."""
    from specproof.harness.check.contracts.batched import BatchedScenario
    from specproof.harness.exact.tolerances import check_tolerance

    real = tiled_scenario(151936).realise(dtype)
    positive = ((real.target > 0).reshape(-1, real.vocab).any(0) | (real.draft > 0).reshape(-1, real.vocab).any(0))
    assert real.support == int(positive.sum()) < real.vocab // 20
    prepared = BatchedScenario(real, None)
    assert prepared.tolerance == float(check_tolerance(dtype, real.support, real.k))
    assert prepared.tolerance <= float(check_tolerance(dtype, real.vocab, real.k))
    if dtype == "float32":  # the V-wide band was 0.0272: no sample size reached 0.02 there
        assert prepared.tolerance < 0.002 < float(check_tolerance(dtype, real.vocab, real.k))
    dense = default_suite()[0].realise(dtype)  # a dense scenario keeps its full width
    assert dense.support == dense.vocab


def test_prepared_runtime_sized_scenarios_are_bounded_by_their_summed_vocabulary(monkeypatch):
    """A long session (a test suite, a campaign) preparing many large scenarios keeps their summed V under
    _CACHE_TOKENS: each holds a call's row buffers and its position events (hundreds of MB at V = 151,936)."""
    import torch

    from specproof.harness.check.contracts import batched

    monkeypatch.setattr(batched, "_PREPARED", {})
    monkeypatch.setattr(batched, "_CACHE_TOKENS", 3 * 5000)
    options = CheckOptions.build()
    assert tiled_scenario(5000) is tiled_scenario(5000)  # one object: its preparation is reused
    first = batched.prepare(tiled_scenario(5000), options, torch.device("cpu"))
    assert batched.prepare(tiled_scenario(5000), options, torch.device("cpu")) is first
    for seed in range(5):
        batched.prepare(tiled_scenario(5000, seed=seed), options, torch.device("cpu"))
        assert sum(s.vocab for s, _ in batched._PREPARED.values()) <= 3 * 5000
