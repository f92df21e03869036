"""The one base of the check's ATen-level observers (:class:`~.precision.PrecisionProbe`,
:class:`~.injection.EdgeInjection`): a :class:`~torch.utils._python_dispatch.TorchDispatchMode` that loads
``torch._dynamo`` only when something else has loaded it.

torch (2.5 and later) wraps every subclass's ``__torch_dispatch__`` in ``torch._disable_dynamo``, which imports
``torch._dynamo`` on the first dispatched op: about 1.3 s of every check on this 2-core machine, spent inside the
first verifier call the probe times.  Disabling dynamo matters only where dynamo can trace a frame, and dynamo
traces nothing before it is imported; so :class:`DispatchMode` runs the plain ``__torch_dispatch__`` until
``torch._dynamo`` is fully imported (a verifier that calls ``torch.compile`` imports it), and from then on the
disabled one torch would have used.
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["DispatchMode"]


def _dynamo_loaded() -> bool:
    module = sys.modules.get("torch._dynamo")
    return module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False)


def _disabled_once_dynamo_loads(raw: Callable[..., Any]) -> Callable[..., Any]:
    disabled: Callable[..., Any] | None = None

    @functools.wraps(raw)
    def dispatch(*args: Any, **kwargs: Any) -> Any:
        nonlocal disabled
        if disabled is None:
            if not _dynamo_loaded():
                return raw(*args, **kwargs)
            disabled = torch._disable_dynamo(raw, recursive=True)
        return disabled(*args, **kwargs)

    return dispatch


class DispatchMode(TorchDispatchMode):
    """A dispatch mode whose subclasses' ``__torch_dispatch__`` is dynamo-disabled lazily (module docstring)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # torch's eager wrapping; ours is in __init_subclass__

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        raw = cls.__dict__.get("__torch_dispatch__")
        if raw is not None and not isinstance(raw, classmethod):
            cls.__torch_dispatch__ = _disabled_once_dynamo_loads(raw)
