"""``Module`` and ``Parameter``: torch.nn.Module's semantics for inference, on numpy."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Iterator, Mapping, NamedTuple

import numpy as np


class Parameter(np.ndarray):
    """An ndarray that a ``Module`` registers as a parameter when assigned as an attribute."""

    def __new__(cls, data: Any) -> "Parameter":
        return np.asarray(data).view(cls)

    def __repr__(self) -> str:
        return f"Parameter containing:\n{np.asarray(self)!r}"


class IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]


class Module:
    """Base class of every layer; holds parameters, buffers and child modules by name."""

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: np.ndarray | None,
                        persistent: bool = True) -> None:
        if tensor is not None and not isinstance(tensor, np.ndarray):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer "
                            f"'{name}' (ndarray or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._modules[name] = module

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, Parameter):
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            self.__dict__.get("_modules", {}).pop(name, None)
            if "_modules" not in self.__dict__:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._modules[name] = value
        elif name in self.__dict__.get("_buffers", {}):
            self.register_buffer(name, value, name not in self._non_persistent_buffers)
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        for store in ("_parameters", "_buffers", "_modules"):
            values = self.__dict__.get(store)
            if values is not None and name in values:
                return values[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, "Module"]]:
        seen: set[int] = set()
        stack = [(prefix, self)]
        while stack:
            name, module = stack.pop(0)
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield name, module
            stack[0:0] = [(f"{name}.{child_name}" if name else child_name, child)
                          for child_name, child in module._modules.items() if child is not None]

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        for name, child in self._modules.items():
            if child is not None:
                yield name, child

    def children(self) -> Iterator["Module"]:
        return (child for _, child in self.named_children())

    def modules(self) -> Iterator["Module"]:
        return (module for _, module in self.named_modules())

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        seen: set[int] = set()
        for module_prefix, module in self.named_modules(prefix):
            for name, param in module._parameters.items():
                if param is not None and id(param) not in seen:
                    seen.add(id(param))
                    yield (f"{module_prefix}.{name}" if module_prefix else name), param

    def parameters(self) -> Iterator[Parameter]:
        return (param for _, param in self.named_parameters())

    def named_buffers(self, prefix: str = "") -> Iterator[tuple[str, np.ndarray]]:
        for module_prefix, module in self.named_modules(prefix):
            for name, buf in module._buffers.items():
                if buf is not None:
                    yield (f"{module_prefix}.{name}" if module_prefix else name), buf

    def buffers(self) -> Iterator[np.ndarray]:
        return (buf for _, buf in self.named_buffers())

    def state_dict(self, prefix: str = "") -> "OrderedDict[str, np.ndarray]":
        """Parameters and persistent buffers by dotted name, as torch names them."""
        out: OrderedDict[str, np.ndarray] = OrderedDict()
        for name, param in self._parameters.items():
            if param is not None:
                out[prefix + name] = param
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers:
                out[prefix + name] = buf
        for name, child in self._modules.items():
            if child is not None:
                out.update(child.state_dict(prefix=f"{prefix}{name}."))
        return out

    def load_state_dict(self, state_dict: Mapping[str, Any],
                        strict: bool = True) -> IncompatibleKeys:
        """Copy values into parameters and buffers by name.

        Raises:
            RuntimeError: with ``strict``, listing every missing and unexpected key; always
                listing every key whose shape does not match.
        """
        own = self.state_dict()
        missing = [key for key in own if key not in state_dict]
        unexpected = [key for key in state_dict if key not in own]
        mismatched = []
        for key, target in own.items():
            if key in state_dict:
                value = np.asarray(state_dict[key])
                if value.shape != target.shape:
                    mismatched.append(f"size mismatch for {key}: copying a param with shape "
                                      f"{value.shape} from checkpoint, the shape in current "
                                      f"model is {target.shape}.")
                    continue
                target[...] = value
        errors = list(mismatched)
        if strict and unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: "
                          + ", ".join(f'"{k}"' for k in unexpected) + ". ")
        if strict and missing:
            errors.insert(0, "Missing key(s) in state_dict: "
                          + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        return IncompatibleKeys(missing, unexpected)

    def train(self, mode: bool = True) -> "Module":
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [line for line in self.extra_repr().split("\n") if line]
        for name, child in self._modules.items():
            child_repr = repr(child).replace("\n", "\n  ")
            lines.append(f"({name}): {child_repr}")
        head = f"{type(self).__name__}("
        if not self._modules:
            return head + "\n  ".join(lines) + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"
