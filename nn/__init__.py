"""A PyTorch-style Module API on numpy; its eager execution is the reference semantics.

``from nn import functional as F`` gives the op vocabulary; layers are exported here by
their torch names (the list is ``nn.layers.__all__``).
"""

from . import functional, init, layers, models, serialization
from .layers import *  # every layer, by its torch name
from .module import IncompatibleKeys, Module
from .parameter import Parameter

__all__ = [*layers.__all__, "IncompatibleKeys", "Module", "Parameter",  # noqa: PLE0604
           "functional", "init", "models", "serialization"]
