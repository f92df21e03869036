"""A user's target, loaded once the same way for ``check``, ``report``, ``campaign`` and the Ray workers.

A target is ``package.module:function`` or ``path/to/file.py:function`` (:func:`specproof.loading.load_object`),
in a contract's own signature or, with an adapter (``--adapter NAME``), in a runtime's layout that the
adapter converts.  :func:`target_contract` says which contract a target is checked under (the adapter's,
which a ``contract`` given beside it must agree with; else ``contract``; else batched) without importing
the target; :func:`load_target` imports it and checks its signature.  Usage errors name ``--contract``,
``--adapter`` or ``TARGET``.
"""

from __future__ import annotations

from typing import Any

from specproof.errors import SpecproofInputError

__all__ = ["target_contract", "load_target"]


def target_contract(contract: str | None, adapter: str | None) -> str:
    """The contract a target named with ``contract`` and ``adapter`` (each possibly None) is checked under."""
    from specproof.harness.check.contracts import get_contract

    if adapter is None:
        return get_contract(contract or "batched", "--contract").name
    from specproof.impls.adapters import get_adapter

    chosen = get_adapter(adapter)
    if contract not in (chosen.contract, None):
        raise SpecproofInputError("--adapter", f"{adapter} serves the {chosen.contract} contract, not {contract}",
                                  f"drop --contract or use --contract {chosen.contract}")
    return chosen.contract


def load_target(spec: str, contract: str | None = None, adapter: str | None = None) -> tuple[Any, str]:
    """The target ``spec`` names, wrapped by ``adapter`` when given and checked against its contract's
    signature: ``(callable, contract name)``.  The target's module is imported and executed with the
    caller's rights."""
    from specproof.harness.check.contracts import get_contract
    from specproof.loading import load_object

    name = target_contract(contract, adapter)
    fn = load_object(spec, "TARGET")
    if adapter is not None:
        from specproof.impls.adapters import get_adapter

        return get_adapter(adapter).wrap(fn), name
    return get_contract(name, "--contract").check_signature(fn, "TARGET"), name
