"""The engine side: linker, compartments, sessions, compiled-code cache and the CLI."""

from .compartment import Compartment, ResourceLimits, parse_size
from .errors import ExitTrap, LimitExceeded, LinkError, ModelFormatError, Trap, WasmnnError
from .metadata import ModelMetadata, TensorInfo
from .session import Session, load

__all__ = ["Compartment", "ExitTrap", "LimitExceeded", "LinkError", "ModelFormatError",
           "ModelMetadata", "ResourceLimits", "Session", "TensorInfo", "Trap", "WasmnnError",
           "load", "parse_size"]
