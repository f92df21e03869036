"""The rows each zoo member reads on a realised scenario, as the exact member laws take them.

:mod:`specproof.proofs.laws.members` writes each member's rule over a
:class:`~specproof.proofs.laws.members.RoundView` (plain data); this module builds that view from a
:class:`~specproof.harness.check.contracts.batched.scenarios.Realisation`: the rounded rows taken
exactly (``Realisation.rounded.row``, not renormalised), each processed table
(:data:`~specproof.proofs.laws.members.PROCESSED_TABLES`) as the member's own processor computes it in
the dtype, the generator's ``P(u == 0)`` (:func:`~specproof.harness.exact.uniform_grids.uniform_grid`,
``torch.rand`` on CPU), the dtype's smallest normal, and whether the installed transformers accepts on
``r <= p/q``.
"""

from __future__ import annotations

from fractions import Fraction

import torch

from specproof.impls import get
from specproof.impls.adapters.transformers_release import accepts_ratio_ties
from specproof.proofs.laws.members import MEMBER_LAWS, PROCESSED_TABLES, Prefix, Row, RoundView
from specproof.proofs.laws.sequences import SequenceLaw

from specproof.harness.check.contracts.batched.scenarios import Realisation
from specproof.harness.exact.convert import to_exact
from specproof.harness.exact.dtypes import TORCH_DTYPES
from specproof.harness.exact.uniform_grids import uniform_grid

__all__ = ["round_view", "member_law"]


def _processor(member: str):
    """The ``process_probs`` of the processors the zoo member ``member`` is built with."""
    return get(member).fn.args[0].process_probs


def round_view(real: Realisation) -> RoundView:
    """The rows a member reads on ``real`` (module docstring), each computed once."""
    cache: dict[tuple[str, Prefix], Row] = {}

    def rows(table: str, prefix: Prefix) -> Row:
        hit = cache.get((table, prefix))
        if hit is None:
            base, member = PROCESSED_TABLES.get(table, (table, None))
            tensor = real.rounded.row(base, prefix)
            if member is not None:
                tensor = _processor(member)(tensor.reshape(1, 1, -1)).reshape(-1)
            hit = cache[(table, prefix)] = tuple(to_exact(tensor, base))
        return hit

    return RoundView(real.toy_pair, rows, uniform_grid(real.dtype, "torch-cpu").zero_mass(),
                     Fraction(torch.finfo(TORCH_DTYPES[real.dtype]).tiny), accepts_ratio_ties())


def member_law(name: str, real: Realisation) -> SequenceLaw | None:
    """``P_bad`` of member ``name`` on ``real`` (enumerable realisations only); None: no model."""
    model = MEMBER_LAWS.get(name)
    return None if model is None else model(round_view(real))
