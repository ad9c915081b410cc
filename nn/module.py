"""``Module``: torch.nn.Module's semantics for inference, on numpy.

Three dicts hold a module's state by name (``_parameters``, ``_buffers``, ``_modules``), and
``__setattr__`` routes an assigned value into the right one, as the 2017
``torch/nn/modules/module.py`` does. Error texts follow PyTorch's, with numpy's types named.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Self

import numpy as np

from . import hooks
from . import state_dict as _state_dict
from ._utils import check_name, discard, join, render, typename
from .hooks import RemovableHandle
from .parameter import Parameter
from .state_dict import IncompatibleKeys

__all__ = ["IncompatibleKeys", "Module", "Parameter"]


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
        check_name("parameter", name, self, self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{typename(param)}' object to parameter '{name}' "
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
        check_name("buffer", name, self, self._buffers)
        if tensor is not None and not isinstance(tensor, np.ndarray):
            raise TypeError(f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
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
            raise TypeError(f"{typename(module)} is not a Module subclass")
        check_name("module", name, self, self._modules)
        self._modules[name] = module

    def register_module(self, name: str, module: Module | None) -> None:
        """Alias of ``add_module``."""
        self.add_module(name, module)

    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        modules = self.__dict__.get("_modules")
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            discard(name, self.__dict__, self._buffers, self._modules,
                       self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as parameter '{name}' "
                                "(nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            discard(name, self.__dict__, self._parameters, self._buffers,
                       self._non_persistent_buffers_set)
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as child module '{name}' "
                                "(nn.Module or None expected)")
            modules[name] = value
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, np.ndarray):
                raise TypeError(f"cannot assign '{typename(value)}' as buffer '{name}' "
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
                yield from child.named_modules(memo, join(prefix, name), remove_duplicate)

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
                yield join(owner_prefix, name), value

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

    def _owner(self, target: str) -> tuple[Module, str]:
        """The module holding dotted path ``target``'s last name, and that name."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{type(module).__name__} has no attribute `{name}`")
        return module, name

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target``.

        Raises:
            AttributeError: the path or the name is missing, or it is not a Parameter.
        """
        module, name = self._owner(target)
        param = getattr(module, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> np.ndarray | None:
        """The buffer at dotted path ``target``.

        Raises:
            AttributeError: the path or the name is missing, or it is not a buffer.
        """
        module, name = self._owner(target)
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
        return _state_dict.collect(self, OrderedDict() if destination is None else destination,
                                  prefix, keep_vars)

    def _load_from_state_dict(self, state_dict: Mapping[str, Any], prefix: str,
                              missing: list[str], unexpected: list[str],
                              errors: list[str]) -> None:
        _state_dict.load_local(self, state_dict, prefix, missing, unexpected, errors)

    def load_state_dict(self, state_dict: Mapping[str, Any],
                        strict: bool = True) -> IncompatibleKeys:
        """Copy values into parameters and persistent buffers by name, casting to their dtype.

        Returns the missing and unexpected keys (torch's ``_IncompatibleKeys``).

        Raises:
            RuntimeError: one error listing, with ``strict``, every missing and unexpected
                key, and always every key whose shape does not match.
        """
        return _state_dict.load(self, state_dict, strict)

    # -- hooks and calling --------------------------------------------------------------

    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Call ``hook(module, args)`` (or ``(module, args, kwargs)``) before ``forward``.

        A non-None result replaces the args (a non-tuple is wrapped in one), or with
        ``with_kwargs`` must be a tuple ``(args, kwargs)``.
        """
        return hooks.register(self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs,
                              hook, prepend, with_kwargs)

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                              with_kwargs: bool = False) -> RemovableHandle:
        """Call ``hook(module, args, output)`` (or ``(module, args, kwargs, output)``) after
        ``forward``; a non-None result replaces the output."""
        return hooks.register(self._forward_hooks, self._forward_hooks_with_kwargs, hook,
                              prepend, with_kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the pre-hooks, ``forward`` and the forward hooks, in registration order.

        Raises:
            RuntimeError: a ``with_kwargs`` pre-hook returned something other than None or
                an ``(args, kwargs)`` pair.
        """
        return hooks.call(self, args, kwargs)

    # -- mode, apply, dtype -------------------------------------------------------------

    def train(self, mode: bool = True) -> Self:
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

    def eval(self) -> Self:
        """``train(False)``: dropout becomes identity, batch norm uses running statistics."""
        return self.train(False)

    def apply(self, fn: Callable[[Module], None]) -> Self:
        """Call ``fn`` on every child (recursively, children first), then on this module."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def _apply(self, fn: Callable[[np.ndarray], np.ndarray]) -> Self:
        """Replace every parameter and buffer by ``fn`` of it; shared ones stay shared."""
        _state_dict.replace_tensors(self, fn)
        return self

    def to(self, dtype: Any) -> Self:
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

    def float(self) -> Self:
        """Cast floating-point parameters and buffers to float32."""
        return self.to(np.float32)

    def half(self) -> Self:
        """Cast floating-point parameters and buffers to float16."""
        return self.to(np.float16)

    def double(self) -> Self:
        """Cast floating-point parameters and buffers to float64."""
        return self.to(np.float64)

    # -- repr ---------------------------------------------------------------------------

    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The module's own settings shown in its repr; layers override it."""
        return ""

    def __repr__(self) -> str:
        return render(self._get_name(), self.extra_repr(), self._modules)
