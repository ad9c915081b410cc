"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, indexed and named as torch's."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..module import Module

__all__ = ["ModuleDict", "ModuleList", "Sequential"]


class _Indexed(Module):
    """Children named ``"0"``, ``"1"``, ... and kept numbered in order."""

    def _key(self, idx: int) -> str:
        """The name of the child at position ``idx`` (negative counts from the end)."""
        idx = operator.index(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range")
        return list(self._modules)[idx]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())  # type: ignore[arg-type]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, self._key(idx), module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)
        for key in (keys[idx] if isinstance(idx, slice) else [self._key(idx)]):
            delattr(self, key)
        self._modules = OrderedDict(
            (str(i), module) for i, module in enumerate(self._modules.values()))

    def append(self, module: Module) -> _Indexed:
        """Add ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> _Indexed:
        """Append every module of ``modules``."""
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Put ``module`` before position ``index``, renumbering the rest."""
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules = OrderedDict()
        self.extend(modules)  # type: ignore[arg-type]

    def __dir__(self) -> list[str]:
        return [key for key in super().__dir__() if not key.isdigit()]


class Sequential(_Indexed):
    """Children called in order, each on the previous one's output.

    ``Sequential(a, b)`` names them ``"0"``, ``"1"``; ``Sequential(OrderedDict(...))``
    keeps the given names.

    >>> from nn import Linear, ReLU
    >>> Sequential(Linear(2, 3), ReLU())[0]
    Linear(in_features=2, out_features=3, bias=True)
    """

    def __init__(self, *args: Module | OrderedDict[str, Module]) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, child in args[0].items():
                self.add_module(name, child)
        else:
            for index, module in enumerate(args):
                self.add_module(str(index), module)  # type: ignore[arg-type]

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))  # type: ignore[arg-type]
        return self._modules[self._key(idx)]

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input


class ModuleList(_Indexed):
    """A list of modules, registered so their parameters are seen; it has no forward.

    >>> from nn import Linear
    >>> len(ModuleList([Linear(2, 2) for _ in range(3)]))
    3
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])  # type: ignore[arg-type]
        return self._modules[self._key(idx)]

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)  # type: ignore[return-value]

    def __repr__(self) -> str:
        """torch's repr: runs of identical children shown once, as ``(0-5): 6 x ...``."""
        reprs = [repr(module) for module in self]
        if not reprs:
            return self._get_name() + "()"
        runs: list[list[Any]] = []
        for index, text in enumerate(reprs):
            if runs and runs[-1][2] == text:
                runs[-1][1] = index
            else:
                runs.append([index, index, text])
        lines = []
        for start, end, text in runs:
            head = f"({start}): " if start == end else f"({start}-{end}): {end - start + 1} x "
            lines.append((head + text).replace("\n", "\n  "))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules, registered under their keys; it has no forward.

    >>> from nn import ReLU
    >>> list(ModuleDict({"act": ReLU()}))
    ['act']
    """

    def __init__(self, modules: Mapping[str, Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]  # type: ignore[return-value]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Remove and return the module under ``key``."""
        module = self[key]
        del self[key]
        return module

    def keys(self) -> Iterable[str]:
        """The keys, in order."""
        return self._modules.keys()

    def items(self) -> Iterable[tuple[str, Module]]:
        """``(key, module)`` pairs, in order."""
        return self._modules.items()  # type: ignore[return-value]

    def values(self) -> Iterable[Module]:
        """The modules, in order."""
        return self._modules.values()  # type: ignore[return-value]

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add (or replace) modules from a mapping or from ``(key, module)`` pairs."""
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for key, module in pairs:
            self[key] = module
