"""What one ``run`` with inputs of given shapes does, worked out once and reused.

Checking inputs against the metadata, resolving symbolic dims and slicing typed views of
linear memory cost tens of microseconds of Python per call, as much as a small model's whole
inference. All of it depends only on the inputs' names, shapes and dtypes, so a ``Planner``
checks a combination once (``session.bind``) and keeps the resulting ``RunPlan``; later calls
with the same shapes only look it up. ``MemoryViews`` keeps one instance's typed views of each
plan's tensors until the guest grows (and maybe moves) its memory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import metadata as md

MAX_PLANS = 64
"""How many shape combinations a ``Planner`` remembers; past that it starts afresh, so a
caller feeding ever new shapes costs a re-check per call, never unbounded memory."""
Bind = Callable[[md.ModelMetadata, Any, int], tuple[dict[str, np.ndarray], dict[str, int]]]


@dataclass(frozen=True)
class Tensor:
    """One input or output of a plan: its concrete shape and size (where it lies is the
    instance's business: ``ModelInstance.addresses``)."""

    name: str
    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    nbytes: int


@dataclass(frozen=True, eq=False)
class RunPlan:
    """The dims, the entry point's arguments and every tensor's shape for one binding.
    Compared by identity: a ``Planner`` makes one per binding, and hashing by identity keeps
    the per-call lookup of its views cheap."""

    dims: dict[str, int]
    args: tuple[int, ...]
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]

    @classmethod
    def of(cls, metadata: md.ModelMetadata, dims: dict[str, int]) -> RunPlan:
        def tensor(info: md.TensorInfo) -> Tensor:
            return Tensor(info.name, np.dtype(info.dtype), info.resolve(dims), info.nbytes(dims))

        return cls(dims, tuple(dims[d.name] for d in metadata.dims),
                   tuple(map(tensor, metadata.inputs)), tuple(map(tensor, metadata.outputs)))


class Planner:
    """``bind`` memoized on the inputs' shapes and dtypes.

    Only inputs whose dtypes are exactly the model's are remembered: a dtype that is converted
    must warn on every call, so those take the full check each time.
    """

    def __init__(self, metadata: md.ModelMetadata, bind: Bind):
        self._metadata = metadata
        self._bind = bind
        self._names = tuple(t.name for t in metadata.inputs)
        self._plans: dict[tuple[Any, ...], RunPlan] = {}

    def plan(self, inputs: Any, stacklevel: int) -> tuple[tuple[np.ndarray, ...], RunPlan]:
        """The input arrays in the model's order, and the plan for their shapes.

        Raises:
            TypeError, ValueError: as ``session.bind``.
        """
        arrays = self._arrays(inputs)
        key = None if arrays is None else tuple((a.shape, a.dtype) for a in arrays)
        plan = self._plans.get(key) if key is not None else None
        if plan is not None:
            return arrays, plan  # type: ignore[return-value]
        bound, dims = self._bind(self._metadata, inputs, stacklevel + 1)
        plan = RunPlan.of(self._metadata, dims)
        arrays = tuple(bound[name] for name in self._names)
        if all(a.dtype == t.dtype for a, t in zip(arrays, plan.inputs)):
            if len(self._plans) >= MAX_PLANS:
                self._plans.clear()
            self._plans[tuple((a.shape, a.dtype) for a in arrays)] = plan
        return arrays, plan

    def _arrays(self, inputs: Any) -> tuple[np.ndarray, ...] | None:
        """The inputs in order when they are a dict (or one array) of exactly the model's
        names holding ndarrays; ``None`` sends them through the full check."""
        if isinstance(inputs, np.ndarray):
            return (inputs,) if len(self._names) == 1 else None
        if not isinstance(inputs, Mapping) or len(inputs) != len(self._names):
            return None
        arrays = tuple(inputs.get(name) for name in self._names)
        if not all(isinstance(a, np.ndarray) for a in arrays):
            return None
        return arrays  # type: ignore[return-value]


class MemoryViews:
    """Typed views of one linear memory for each plan, dropped when the memory changes size
    (wasmtime may move a memory only when it grows).

    Args:
        size: the memory's current size in bytes (cheap: one call into wasmtime).
        whole: the whole memory as a ``uint8`` array (a new view of it).
        addresses: each tensor's byte address for given dims (it may grow the memory).
    """

    def __init__(self, size: Callable[[], int], whole: Callable[[], np.ndarray],
                 addresses: Callable[[dict[str, int]], dict[str, int]]):
        self._size = size
        self._whole = whole
        self._addresses = addresses
        self._memory = whole()
        self._views: dict[RunPlan, tuple[list[np.ndarray], list[np.ndarray]]] = {}

    def current(self) -> np.ndarray:
        """The whole memory as bytes, re-read (and the views dropped) if it changed size."""
        if self._size() != len(self._memory):
            self._memory = self._whole()
            self._views.clear()
        return self._memory

    def of(self, plan: RunPlan) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Writable views of ``plan``'s inputs and outputs in the memory as it is now.

        Raises:
            LimitExceeded, ModelFormatError, Trap: as ``arena.Addresses``, the first time a
                plan's dims are seen.
        """
        views = self._views.get(plan)
        if views is None:
            addresses = self._addresses(plan.dims)
            memory = self.current()  # NOTE: after addresses(), which may grow the memory

            def view(tensor: Tensor) -> np.ndarray:
                start = addresses[tensor.name]
                return (memory[start:start + tensor.nbytes]
                        .view(tensor.dtype).reshape(tensor.shape))

            views = [view(t) for t in plan.inputs], [view(t) for t in plan.outputs]
            if len(self._views) >= MAX_PLANS:
                self._views.clear()
            self._views[plan] = views
        return views
