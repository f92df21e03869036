"""Bad input raises a clear TypeError/ValueError naming the argument, for every implementation.

All implementations share ``impls._validation``; the parametrised test runs each bad input through
every eager batched and uniform-injection record to show none skips it.
"""

import pytest
import torch

from impls_inputs import random_round
from specproof.impls import get, implementations, multidraft_rrs, step_ratio

ROUND_RECORDS = [r for r in implementations() if r.contract in ("batched", "uniforms")
                 and not r.compiled]


def call(record, draft, target, ids, generator=None, uniforms=None):
    if record.contract == "uniforms":
        if uniforms is None:
            floating = isinstance(draft, torch.Tensor) and draft.is_floating_point()
            uniforms = torch.rand(4, 3, dtype=draft.dtype if floating else torch.float32)
        return record.fn(draft, target, ids, uniforms)
    return record.fn(draft, target, ids, torch.Generator() if generator is None else generator)


def good():
    return random_round(torch.float32, batch=4, drafts=2, vocab=5, seed=0)


def nan_target():
    d, t, i = good()
    t[1, 2, 3] = float("nan")
    return d, t, i


def negative_draft():
    d, t, i = good()
    d[0, 1, 0] = -0.25
    return d, t, i


def inf_target():
    d, t, i = good()
    t[2, 0, 1] = float("inf")
    return d, t, i


def empty_target_row():
    d, t, i = good()
    t[3, 1] = 0.0
    return d, t, i


BAD_INPUTS = {
    # name: (inputs, exception, words the message must contain)
    "target missing bonus row": (lambda: (good()[0], good()[1][:, :2], good()[2]),
                                 ValueError, ["target_probs", "K+1"]),
    "draft not 3-d": (lambda: (good()[0][:, 0], good()[1], good()[2]), ValueError,
                      ["draft_probs", "[B, K, V]"]),
    "ids wrong shape": (lambda: (good()[0], good()[1], good()[2][:, :1]), ValueError,
                        ["draft_token_ids", "[B, K]"]),
    "ids int32": (lambda: (good()[0], good()[1], good()[2].int()), TypeError,
                  ["draft_token_ids", "int64", ".long()"]),
    "ids out of range": (lambda: (good()[0], good()[1], good()[2].clone().fill_(5)), ValueError,
                         ["draft_token_ids", "[0, 5)"]),
    "ids padded with -1": (lambda: (good()[0], good()[1], torch.full((4, 2), -1)), ValueError,
                           ["draft_token_ids", "-1"]),
    "dtype mismatch": (lambda: (good()[0].double(), good()[1], good()[2]), TypeError,
                       ["draft_probs", "target_probs", "float64", "float32"]),
    "integer probs": (lambda: (good()[0].long(), good()[1].long(), good()[2]), TypeError,
                      ["draft_probs", "dtype"]),
    "not a tensor": (lambda: (good()[0].tolist(), good()[1], good()[2]), TypeError,
                     ["draft_probs", "torch.Tensor"]),
    "NaN in target": (nan_target, ValueError, ["target_probs", "nan", "(1, 2, 3)"]),
    "inf in target": (inf_target, ValueError, ["target_probs", "inf"]),
    "negative draft prob": (negative_draft, ValueError, ["draft_probs", "-0.25"]),
    "empty target row": (empty_target_row, ValueError, ["target_probs", "zero total mass"]),
    "empty batch": (lambda: tuple(x[:0] for x in good()), ValueError, ["at least 1"]),
}


@pytest.mark.parametrize("record", ROUND_RECORDS, ids=lambda r: r.name)
@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_round_inputs(record, case):
    make, exception, words = BAD_INPUTS[case]
    draft, target, ids = make()
    with pytest.raises(exception) as info:
        call(record, draft, target, ids)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


@pytest.mark.parametrize("record", [r for r in ROUND_RECORDS if r.contract == "batched"
                                    and r.rule != "greedy"], ids=lambda r: r.name)
def test_generator_required_and_typed(record):
    draft, target, ids = good()
    with pytest.raises(TypeError, match="generator must be a torch.Generator.*manual_seed"):
        record.fn(draft, target, ids, 1234)
    with pytest.raises(TypeError, match="generator"):
        record.fn(draft, target, ids, None)


def test_devices_must_agree():
    draft, target, ids = good()
    with pytest.raises(ValueError, match="target_probs is on meta.*share one device"):
        get("canonical-ratio-race").fn(draft, target.to("meta"), ids, torch.Generator())


@pytest.mark.parametrize("name", [r.name for r in ROUND_RECORDS if r.contract == "uniforms"])
def test_bad_uniforms(name):
    fn = get(name).fn
    draft, target, ids = good()
    with pytest.raises(ValueError, match=r"uniforms must have shape \[4, 3\]"):
        fn(draft, target, ids, torch.rand(4, 2))
    with pytest.raises(TypeError, match="uniforms has dtype torch.float64.*dtype under test"):
        fn(draft, target, ids, torch.rand(4, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"uniforms must lie in \[0, 1\]"):
        fn(draft, target, ids, torch.full((4, 3), 1.5))
    with pytest.raises(ValueError, match=r"uniforms must lie in \[0, 1\]"):
        fn(draft, target, ids, torch.full((4, 3), float("nan")))


def test_bad_whitebox_inputs():
    p = torch.tensor([0.5, 0.5, 0.0])
    with pytest.raises(ValueError, match="q must have the shape of p"):
        step_ratio(p, torch.tensor([0.5, 0.5]))
    with pytest.raises(TypeError, match="p is torch.float32 but q is torch.float64"):
        step_ratio(p, p.double())
    with pytest.raises(ValueError, match=r"p must have shape \[V\] or \[B, V\]"):
        step_ratio(p.reshape(1, 1, 3), p.reshape(1, 1, 3))
    with pytest.raises(ValueError, match="q must hold finite.*nan"):
        step_ratio(p, torch.tensor([0.5, float("nan"), 0.5]))


def test_bad_multidraft_inputs():
    q = torch.tensor([[0.5, 0.5, 0.0]])
    p = torch.tensor([[0.25, 0.25, 0.5]])
    with pytest.raises(ValueError, match=r"draft_token_ids must have shape \[B, n\]"):
        multidraft_rrs(q, p, torch.zeros(1, 0, dtype=torch.int64), torch.Generator())
    with pytest.raises(ValueError, match=r"draft_probs must have shape \[B, V\]"):
        multidraft_rrs(q.unsqueeze(0), p, torch.zeros(1, 2, dtype=torch.int64), torch.Generator())
    with pytest.raises(ValueError, match=r"token ids in \[0, 3\)"):
        multidraft_rrs(q, p, torch.full((1, 2), 3), torch.Generator())
