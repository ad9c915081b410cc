"""A PyTorch-style Module API on numpy; its eager execution is the reference semantics.

``from nn import functional as F`` gives the op vocabulary; layers are exported here by
their torch names.
"""

from . import functional, init, models, serialization
from .layers import *  # noqa: F403
from .layers import __all__ as _layers
from .module import IncompatibleKeys, Module
from .parameter import Parameter

__all__ = ["IncompatibleKeys", "Module", "Parameter", "functional", "init", "models",
           "serialization", *_layers]
