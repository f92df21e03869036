"""Interpretations of the arithmetic interface."""

from .exact import ExactArith, ExactLog, exact_scalar
from .torch_backend import TorchArith

__all__ = ["ExactArith", "ExactLog", "TorchArith", "exact_scalar"]
