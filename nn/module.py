"""``Module``: torch.nn.Module's semantics for inference, on numpy.

Three dicts hold a module's state by name (``_parameters``, ``_buffers``, ``_modules``), and
``__setattr__`` routes an assigned value into the right one, as the 2017
``torch/nn/modules/module.py`` does. Error texts follow PyTorch's, with numpy's types named.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

import numpy as np

from .hooks import RemovableHandle
from .parameter import Parameter

__all__ = ["IncompatibleKeys", "Module", "Parameter"]


def _typename(value: Any) -> str:
    module = type(value).__module__
    name = type(value).__qualname__
    return name if module == "builtins" else f"{module}.{name}"


def _check_name(kind: str, name: Any, owner: Module, store: dict[str, Any]) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
    if "." in name:
        raise KeyError(f"{kind} name can't contain \".\", got: {name}")
    if name == "":
        raise KeyError(f"{kind} name can't be empty string \"\"")
    if hasattr(owner, name) and name not in store:
        raise KeyError(f"attribute '{name}' already exists")


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict`` returns: keys the model had but the dict lacked, and back."""

    missing_keys: list[str]
    unexpected_keys: list[str]


class Module:
    """Base class of every layer; holds parameters, buffers and child modules by name.

    >>> class Scale(Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.weight = Parameter(np.full(2, 3.0, np.float32))
    ...     def forward(self, x):
    ...         return x * self.weight
    >>> Scale()(np.ones(2, np.float32)).tolist(), list(Scale().state_dict())
    ([3.0, 3.0], ['weight'])
    """

    training: bool
    _parameters: OrderedDict[str, Parameter | None]
    _buffers: OrderedDict[str, np.ndarray | None]
    _non_persistent_buffers_set: set[str]
    _modules: OrderedDict[str, Module | None]

    def __init__(self) -> None:
        for name, value in (("training", True), ("_parameters", OrderedDict()),
                            ("_buffers", OrderedDict()), ("_non_persistent_buffers_set", set()),
                            ("_forward_pre_hooks", OrderedDict()),
                            ("_forward_pre_hooks_with_kwargs", OrderedDict()),
                            ("_forward_hooks", OrderedDict()),
                            ("_forward_hooks_with_kwargs", OrderedDict()),
                            ("_modules", OrderedDict())):
            object.__setattr__(self, name, value)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation; every subclass defines it. Call the module, not ``forward``."""
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function')

    # -- registration -------------------------------------------------------------------

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add ``param`` (or None) under ``name``.

        Raises:
            AttributeError: before ``Module.__init__`` ran.
            TypeError: ``name`` is not a str, or ``param`` is not a Parameter or None.
            KeyError: ``name`` is empty, dotted, or an existing non-parameter attribute.
        """
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name("parameter", name, self, self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: np.ndarray | None,
                        persistent: bool = True) -> None:
        """Add a buffer: state that is not a parameter; ``persistent`` ones are saved.

        Raises:
            AttributeError: before ``Module.__init__`` ran.
            TypeError: ``name`` is not a str, or ``tensor`` is not an ndarray or None.
            KeyError: ``name`` is empty, dotted, or an existing non-buffer attribute.
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name("buffer", name, self, self._buffers)
        if tensor is not None and not isinstance(tensor, np.ndarray):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(numpy.ndarray or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module (or None) under ``name``.

        Raises:
            TypeError: ``module`` is not a Module or None, or ``name`` is not a str.
            KeyError: ``name`` is empty, dotted, or an existing non-module attribute.
        """
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        _check_name("module", name, self, self._modules)
        self._modules[name] = module

    def register_module(self, name: str, module: Module | None) -> None:
        """Alias of ``add_module``."""
        self.add_module(name, module)

    def _drop(self, name: str, *stores: dict[str, Any] | set[str]) -> None:
        for store in stores:
            if name in store:
                if isinstance(store, set):
                    store.discard(name)
                else:
                    del store[name]

    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        modules = self.__dict__.get("_modules")
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._drop(name, self.__dict__, self._buffers, self._modules,
                       self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._drop(name, self.__dict__, self._parameters, self._buffers,
                       self._non_persistent_buffers_set)
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(nn.Module or None expected)")
            modules[name] = value
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, np.ndarray):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(numpy.ndarray or None expected)")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        for store in ("_parameters", "_buffers", "_modules"):
            values = self.__dict__.get(store)
            if values is not None and name in values:
                return values[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        names = [*super().__dir__(), *self._parameters, *self._buffers, *self._modules]
        return sorted(name for name in set(names) if not name[0].isdigit())

    # -- traversal ----------------------------------------------------------------------

    def named_modules(self, memo: set[int] | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """This module and every descendant, depth first; a shared module is yielded once."""
        if memo is None:
            memo = set()
        if remove_duplicate and id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(memo, _join(prefix, name), remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """This module and every descendant, each once."""
        return (module for _, module in self.named_modules())

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Direct children by name, each once."""
        seen: set[int] = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self) -> Iterator[Module]:
        """Direct children, each once."""
        return (child for _, child in self.named_children())

    def _named_members(self, store: str, prefix: str, recurse: bool,
                       remove_duplicate: bool) -> Iterator[tuple[str, Any]]:
        seen: set[int] = set()
        owners = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                  if recurse else [(prefix, self)])
        for owner_prefix, owner in owners:
            for name, value in getattr(owner, store).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield _join(owner_prefix, name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """Parameters by dotted name; a shared parameter is yielded once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Parameters, each once."""
        return (param for _, param in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, np.ndarray]]:
        """Buffers (persistent or not) by dotted name; a shared buffer is yielded once."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[np.ndarray]:
        """Buffers, each once."""
        return (buf for _, buf in self.named_buffers(recurse=recurse))

    def get_submodule(self, target: str) -> Module:
        """The descendant at dotted path ``target`` (``""`` is this module).

        Raises:
            AttributeError: naming the first path element that is missing or not a Module.
        """
        module = self
        for item in target.split(".") if target else []:
            if not hasattr(module, item):
                raise AttributeError(f"{type(module).__name__} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target``.

        Raises:
            AttributeError: the path or the name is missing, or it is not a Parameter.
        """
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{type(module).__name__} has no attribute `{name}`")
        param = getattr(module, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> np.ndarray:
        """The buffer at dotted path ``target``.

        Raises:
            AttributeError: the path or the name is missing, or it is not a buffer.
        """
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{type(module).__name__} has no attribute `{name}`")
        if name not in module._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return module._buffers[name]

    # -- state dict ---------------------------------------------------------------------

    def state_dict(self, *, destination: OrderedDict[str, np.ndarray] | None = None,
                   prefix: str = "", keep_vars: bool = False) -> OrderedDict[str, np.ndarray]:
        """Parameters and persistent buffers by dotted name, exactly as torch names them.

        Values share memory with the module; ``keep_vars`` keeps Parameters as Parameters,
        otherwise they come as plain ndarrays (torch's detached tensors).
        """
        if destination is None:
            destination = OrderedDict()
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.view(np.ndarray)
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(destination=destination, prefix=f"{prefix}{name}.",
                                 keep_vars=keep_vars)
        return destination

    def _load_from_state_dict(self, state_dict: Mapping[str, Any], prefix: str,
                              missing: list[str], unexpected: list[str],
                              errors: list[str]) -> None:
        persistent = {name: buf for name, buf in self._buffers.items()
                      if name not in self._non_persistent_buffers_set}
        local = {name: value for name, value in (*self._parameters.items(), *persistent.items())
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
                if head not in self._modules and head not in local:
                    unexpected.append(key)

    def load_state_dict(self, state_dict: Mapping[str, Any],
                        strict: bool = True) -> IncompatibleKeys:
        """Copy values into parameters and persistent buffers by name, casting to their dtype.

        Returns the missing and unexpected keys (torch's ``_IncompatibleKeys``).

        Raises:
            RuntimeError: one error listing, with ``strict``, every missing and unexpected
                key, and always every key whose shape does not match.
        """
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []

        def load(module: Module, prefix: str) -> None:
            module._load_from_state_dict(state_dict, prefix, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, f"{prefix}{name}.")

        load(self, "")
        if strict and unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: "
                          + ", ".join(f'"{key}"' for key in unexpected) + ". ")
        if strict and missing:
            errors.insert(0, "Missing key(s) in state_dict: "
                          + ", ".join(f'"{key}"' for key in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        return IncompatibleKeys(missing, unexpected)

    # -- hooks and calling --------------------------------------------------------------

    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Call ``hook(module, args)`` (or ``(module, args, kwargs)``) before ``forward``.

        A non-None result replaces the args (a non-tuple is wrapped in one), or with
        ``with_kwargs`` must be a tuple ``(args, kwargs)``.
        """
        handle = RemovableHandle(self._forward_pre_hooks,
                                 extra_dicts=(self._forward_pre_hooks_with_kwargs,))
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                              with_kwargs: bool = False) -> RemovableHandle:
        """Call ``hook(module, args, output)`` (or ``(module, args, kwargs, output)``) after
        ``forward``; a non-None result replaces the output."""
        handle = RemovableHandle(self._forward_hooks,
                                 extra_dicts=(self._forward_hooks_with_kwargs,))
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the pre-hooks, ``forward`` and the forward hooks, in registration order.

        Raises:
            RuntimeError: a ``with_kwargs`` pre-hook returned something other than None or
                an ``(args, kwargs)`` pair.
        """
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {result}.")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        output = self.forward(*args, **kwargs)
        for hook_id, hook in list(self._forward_hooks.items()):
            if hook_id in self._forward_hooks_with_kwargs:
                result = hook(self, args, kwargs, output)
            else:
                result = hook(self, args, output)
            if result is not None:
                output = result
        return output

    # -- mode, apply, dtype -------------------------------------------------------------

    def train(self, mode: bool = True) -> Module:
        """Set training mode on this module and, through ``train``, on every child.

        Raises:
            ValueError: ``mode`` is not a bool.
        """
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for child in self.children():
            child.train(mode)
        return self

    def eval(self) -> Module:
        """``train(False)``: dropout becomes identity, batch norm uses running statistics."""
        return self.train(False)

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every child (recursively, children first), then on this module."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def _apply(self, fn: Callable[[np.ndarray], np.ndarray]) -> Module:
        """Replace every parameter and buffer by ``fn`` of it; shared ones stay shared."""
        done: dict[int, np.ndarray] = {}
        for module in self.modules():
            for store in (module._parameters, module._buffers):
                for name, value in store.items():
                    if value is None:
                        continue
                    if id(value) not in done:
                        new = fn(value.view(np.ndarray))
                        done[id(value)] = Parameter(new) if isinstance(value, Parameter) else new
                    store[name] = done[id(value)]  # type: ignore[assignment]
        return self

    def to(self, dtype: Any) -> Module:
        """Cast floating-point parameters and buffers to ``dtype``; ``"cpu"`` is a no-op.

        Raises:
            TypeError: ``dtype`` is not a floating-point dtype (nor ``"cpu"``).
        """
        if isinstance(dtype, str) and dtype == "cpu":
            return self
        target = np.dtype(dtype)
        if not np.issubdtype(target, np.floating):
            raise TypeError("nn.Module.to only accepts floating point dtypes, but got desired "
                            f"dtype={target}")
        return self._apply(
            lambda t: t.astype(target) if np.issubdtype(t.dtype, np.floating) else t)

    def float(self) -> Module:
        """Cast floating-point parameters and buffers to float32."""
        return self.to(np.float32)

    def half(self) -> Module:
        """Cast floating-point parameters and buffers to float16."""
        return self.to(np.float16)

    def double(self) -> Module:
        """Cast floating-point parameters and buffers to float64."""
        return self.to(np.float64)

    # -- repr ---------------------------------------------------------------------------

    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The module's own settings shown in its repr; layers override it."""
        return ""

    def __repr__(self) -> str:
        extra_lines = self.extra_repr().split("\n") if self.extra_repr() else []
        child_lines = [f"({name}): " + repr(child).replace("\n", "\n  ")
                       for name, child in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"
