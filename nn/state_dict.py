"""A module's state: saving and loading it by dotted name, as torch's ``state_dict`` and
``load_state_dict`` do, and replacing its tensors (``Module._apply``): the work behind
those ``Module`` methods."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .parameter import Parameter

if TYPE_CHECKING:
    from .module import Module


class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict`` returns: keys the model had but the dict lacked, and back."""

    missing_keys: list[str]
    unexpected_keys: list[str]


def collect(module: Module, destination: OrderedDict[str, np.ndarray], prefix: str,
            keep_vars: bool) -> OrderedDict[str, np.ndarray]:
    """Add ``module``'s parameters and persistent buffers, and its children's, to
    ``destination`` under ``prefix``; Parameters become plain ndarrays unless ``keep_vars``."""
    for name, param in module._parameters.items():
        if param is not None:
            destination[prefix + name] = param if keep_vars else param.view(np.ndarray)
    for name, buf in module._buffers.items():
        if buf is not None and name not in module._non_persistent_buffers_set:
            destination[prefix + name] = buf
    for name, child in module._modules.items():
        if child is not None:
            child.state_dict(destination=destination, prefix=f"{prefix}{name}.",
                             keep_vars=keep_vars)
    return destination


def load_local(module: Module, state_dict: Mapping[str, Any], prefix: str,
               missing: list[str], unexpected: list[str], errors: list[str]) -> None:
    """Copy the keys under ``prefix`` into ``module``'s own parameters and persistent
    buffers; append what is missing, unexpected or mis-shaped to the three lists."""
    persistent = {name: buf for name, buf in module._buffers.items()
                  if name not in module._non_persistent_buffers_set}
    local = {name: value for name, value in (*module._parameters.items(), *persistent.items())
             if value is not None}
    for name, target in local.items():
        key = prefix + name
        if key not in state_dict:
            missing.append(key)
            continue
        value = np.asarray(state_dict[key])
        if value.shape != target.shape:
            errors.append(f"size mismatch for {key}: copying a param with shape "
                          f"{value.shape} from checkpoint, the shape in current model is "
                          f"{target.shape}.")
            continue
        target[...] = value
    for key in state_dict:
        if key.startswith(prefix):
            head = key[len(prefix):].split(".", 1)[0]
            if head not in module._modules and head not in local:
                unexpected.append(key)


def load(module: Module, state_dict: Mapping[str, Any], strict: bool) -> IncompatibleKeys:
    """``Module.load_state_dict``: every module's ``_load_from_state_dict``, then one error.

    Raises:
        RuntimeError: as ``Module.load_state_dict``.
    """
    missing: list[str] = []
    unexpected: list[str] = []
    errors: list[str] = []

    def visit(current: Module, prefix: str) -> None:
        current._load_from_state_dict(state_dict, prefix, missing, unexpected, errors)
        for name, child in current._modules.items():
            if child is not None:
                visit(child, f"{prefix}{name}.")

    visit(module, "")
    if strict and unexpected:
        errors.insert(0, "Unexpected key(s) in state_dict: "
                      + ", ".join(f'"{key}"' for key in unexpected) + ". ")
    if strict and missing:
        errors.insert(0, "Missing key(s) in state_dict: "
                      + ", ".join(f'"{key}"' for key in missing) + ". ")
    if errors:
        raise RuntimeError(f"Error(s) in loading state_dict for {type(module).__name__}:\n\t"
                           + "\n\t".join(errors))
    return IncompatibleKeys(missing, unexpected)


def replace_tensors(module: Module, fn: Callable[[np.ndarray], np.ndarray]) -> None:
    """Replace every parameter and buffer of ``module`` and its descendants by ``fn`` of it
    (a Parameter stays a Parameter); a tensor shared by several stays shared."""
    done: dict[int, np.ndarray] = {}
    for owner in module.modules():
        for store in (owner._parameters, owner._buffers):
            for name, value in store.items():
                if value is None:
                    continue
                if id(value) not in done:
                    new = fn(value.view(np.ndarray))
                    done[id(value)] = Parameter(new) if isinstance(value, Parameter) else new
                store[name] = done[id(value)]  # type: ignore[assignment]
