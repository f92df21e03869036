"""The check contracts, one record each, and the one table every entry point dispatches through.

A contract says what the target is (its signature), which options only it takes, and where its
scenarios, their exact laws and the way to call the target live (``module``: imported only when a
check runs, so the CLI's parser stays free of torch).  The driver (:mod:`..driver`) runs statistics,
the reproducibility pair, the RNG edge injection, the time budget and the verdict the same way for
every contract; the contract's module supplies, per scenario, a :class:`.prepared.PreparedScenario`.
A fourth contract is one more record and one module implementing :class:`.prepared.ContractModule`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from specproof.errors import SpecproofInputError

__all__ = ["Contract", "CONTRACTS", "get_contract", "CONTRACT_OPTIONS"]


@dataclass(frozen=True)
class Contract:
    """One check contract (module docstring).  ``options``: the keyword options only this contract takes,
    each with its command-line flag."""

    name: str
    signature: str
    arity: int
    description: str
    module: str
    options: dict[str, str] = field(default_factory=dict)

    def implementation(self) -> Any:
        """The module with the scenarios, laws and calling convention (imports torch)."""
        return importlib.import_module(self.module)

    def check_signature(self, fn: Any, argument: str = "TARGET") -> Any:
        """``fn`` must be a callable that can take the contract's arguments; returns it."""
        import inspect

        if not callable(fn):
            raise SpecproofInputError(argument, f"{fn!r} is a {type(fn).__name__}, not a function",
                                      f"name a function {self.signature}")
        try:
            inspect.signature(fn).bind(*([None] * self.arity))
        except TypeError:
            raise SpecproofInputError(
                argument, f"has signature {inspect.signature(fn)}, which cannot take the {self.name} contract's "
                f"{self.arity} arguments", f"accept {self.signature}, or pass --adapter for a runtime's layout"
            ) from None
        except ValueError:  # builtins without a signature: let the call decide
            pass
        return fn


CONTRACTS: dict[str, Contract] = {c.name: c for c in (
    Contract("batched", "verify(draft_probs [B,K,V], target_probs [B,K+1,V], draft_token_ids [B,K], generator) "
             "-> emitted [B,K+1] int64 padded with -1", 4,
             "a batched verifier: K drafts per row, verified left to right, a correction or bonus token",
             "specproof.harness.check.contracts.batched", {"rule": "--rule", "vocab": "--vocab"}),
    Contract("tree", "verify(parents [N] int64, draft_probs [B,N,V], target_probs [B,N+1,V], node_tokens [B,N] "
             "int64, generator) -> emitted [B,D+1] int64 padded with -1", 5,
             "a tree / multi-draft verifier: a token tree per row, siblings tried in index order",
             "specproof.harness.check.contracts.tree", {"siblings": "--siblings"}),
    Contract("generate", "generate(target, draft, prompt_ids, max_new_tokens, sampling, generator) -> [B, N] int64",
             6, "a whole speculative-decoding pipeline: models, processors, drafting and verification",
             "specproof.harness.check.contracts.generate",
             {"models": "--models", "sampling": "--temperature/--top-k/--top-p/--min-p",
              "new_tokens": "--new-tokens"}),
)}

CONTRACT_OPTIONS: dict[str, str] = {option: name for name, c in CONTRACTS.items() for option in c.options}
"""Each contract-specific option and the contract that owns it."""


def get_contract(name: Any, argument: str = "contract") -> Contract:
    """The record named ``name``; an unknown name is a usage error naming the contracts."""
    if isinstance(name, Contract):
        return name
    if not isinstance(name, str) or name not in CONTRACTS:
        raise SpecproofInputError(argument, f"{name!r} is not a check contract",
                                  f"use one of {', '.join(CONTRACTS)}")
    return CONTRACTS[name]
