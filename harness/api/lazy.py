"""Packages whose public names load on first use, so a command pays only for what it touches.

``make_lazy(__name__, {"name": "submodule", ...})`` at the end of a package's ``__init__`` replaces
``from .submodule import name`` lines: ``package.name`` and ``from package import name`` import the
submodule when first asked (PEP 562 semantics, on a module subclass).  Where a submodule is named like
the function it defines (``catalogue.catalogue``), the package keeps the function even after the
submodule loads, as the eager import did.
"""

from __future__ import annotations

import sys
import types
from importlib import import_module
from typing import Any, Mapping

__all__ = ["make_lazy"]


class _LazyPackage(types.ModuleType):
    def _exports(self) -> dict[str, str]:
        return self.__dict__.get("_lazy_exports", {})

    def __getattr__(self, name: str) -> Any:
        module = self._exports().get(name)
        if module is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        absolute = module.startswith("specproof.")
        value = getattr(import_module(module if absolute else f".{module}", self.__name__), name)
        self.__dict__[name] = value
        return value

    def __dir__(self) -> list[str]:
        return sorted(set(self.__dict__) | set(self._exports()))

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and self._exports().get(name) == name:
            value = getattr(value, name)  # the import system binding a same-named submodule
        super().__setattr__(name, value)


def make_lazy(package: str, exports: Mapping[str, str]) -> None:
    """Serve ``exports`` on first use: public name -> its module, relative to ``package`` (``"rules"``)
    or absolute (``"specproof.proofs.laws.step_rules"``)."""
    module = sys.modules[package]
    module.__dict__["_lazy_exports"] = dict(exports)
    module.__class__ = _LazyPackage
