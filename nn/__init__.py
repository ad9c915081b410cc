"""A PyTorch-style Module API on numpy; its eager execution is the reference semantics."""

from . import functional
from .layers import Linear, ReLU, Sequential
from .module import Module, Parameter

__all__ = ["Linear", "Module", "Parameter", "ReLU", "Sequential", "functional"]
