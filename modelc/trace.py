"""Tracing: run ``Module.forward`` on symbolic tensors and record each primitive as a node.

``SymbolicTensor`` implements the ``__nn_function__`` protocol of ``nn._dispatch``, so every
``nn.functional`` primitive called with one is recorded instead of computed; composite ops
record their primitives. It also offers what the eager ndarray offers, with numpy's
semantics, each written with primitives: operators, methods and properties
(``trace_methods``), indexing (``trace_index``), and numpy's ufuncs and functions through
numpy's own protocols (``trace_numpy``). Python that needs a tensor's values (``bool(h)``,
``h.item()``) raises ``TraceError`` at the user's line; a comparison of a symbolic dim is
answered over the dim's declared range (``trace_dims``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import numpy as np

import nn

from . import ops
from .errors import CompileError, TraceError, UnsupportedOpError
from .graph import Graph, Node, Shape, Value
from .trace_dims import SymbolicDim
from .trace_methods import ArrayMethods
from .trace_numpy import array_function, array_ufunc
from .trace_source import user_frame

LIST_MARK = "*"
"""Suffix of ``Node.input_names`` entries that were elements of one list argument."""
DynamicSpec = Mapping[str, Mapping[int, tuple[str, int, int]]]
__all__ = ["LIST_MARK", "DynamicSpec", "SymbolicDim", "SymbolicTensor", "Tracer", "trace",
           "user_frame"]


class SymbolicTensor(ArrayMethods):
    """A traced tensor: a handle on a graph value with a (possibly symbolic) shape, offering
    what an ndarray offers (``trace_methods``, ``trace_index``, ``trace_numpy``)."""

    def __init__(self, tracer: Tracer, value: Value):
        self._tracer = tracer
        self.value = value

    @classmethod
    def __nn_function__(cls, name: str, signature: inspect.Signature,
                        arguments: dict[str, Any]) -> Any:
        tracer = next(a._tracer for a in _flatten(arguments.values())
                      if isinstance(a, (cls, SymbolicDim)))
        return tracer.record(name, signature, arguments)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        return array_function(func, args, kwargs)

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TraceError(f"a traced tensor ({self.value!r}) was converted to a numpy array, "
                         "whose values exist only at run time (np.asarray, np.array, or a "
                         "constant array indexed by it: gather rows of a constant table with "
                         f"nn.functional.embedding(ids, table)); at {user_frame()}")

    def __repr__(self) -> str:
        return f"SymbolicTensor({self.value!r}, shape={list(self.value.shape)})"


def _flatten(values: Any) -> list[Any]:
    out: list[Any] = []
    for v in values:
        out.extend(v if isinstance(v, (list, tuple)) else [v])
    return out


class Tracer:
    """Builds a ``Graph`` as primitives are called on its symbolic tensors."""

    def __init__(self, graph: Graph, *, guard_dims: bool = False):
        """Args:
            guard_dims: answer comparisons of symbolic dims with ints over their declared
                ranges (a user's forward); off, they compare as the dim's name (str), as the
                ONNX importer and the passes that re-trace rely on.
        """
        self.graph = graph
        self.guard_dims = guard_dims
        self._counts: dict[str, int] = {}
        # NOTE: keyed by id(), so each entry keeps its array alive: a freed temporary's id
        # could otherwise be reused by a different array.
        self._constants: dict[int, tuple[np.ndarray, Value]] = {}

    def fresh(self, base: str) -> str:
        self._counts[base] = self._counts.get(base, 0) + 1
        return f"{base}_{self._counts[base]}"

    def input(self, name: str, shape: Shape, dtype: str) -> SymbolicTensor:
        value = Value(name, shape, dtype)
        self.graph.inputs[name] = value
        return SymbolicTensor(self, value)

    def constant(self, array: np.ndarray) -> Value:
        if id(array) not in self._constants:
            data = np.asarray(array)
            self._constants[id(array)] = (array, Value(self.fresh("const"), tuple(data.shape),
                                                       str(data.dtype), data=data))
        return self._constants[id(array)][1]

    def record(self, op: str, signature: inspect.Signature, arguments: dict[str, Any]) -> Any:
        source = user_frame()
        try:
            opdef = ops.get(op)
        except UnsupportedOpError as err:
            raise UnsupportedOpError(f"{err}\n  traced from {source}") from None
        inputs: list[Value] = []
        names: list[str] = []
        attrs: dict[str, Any] = {}
        for param, arg in arguments.items():
            if isinstance(arg, SymbolicTensor):
                inputs.append(arg.value)
                names.append(param)
            elif isinstance(arg, np.ndarray):
                inputs.append(self.constant(arg))
                names.append(param)
            elif isinstance(arg, (list, tuple)) and any(
                    isinstance(a, (SymbolicTensor, np.ndarray)) for a in arg):
                for item in arg:
                    inputs.append(item.value if isinstance(item, SymbolicTensor)
                                  else self.constant(np.asarray(item)))
                    names.append(param + LIST_MARK)
            else:
                attrs[param] = arg
        node = Node(self.fresh(op), op, inputs, tuple(names), attrs, meta={"source": source})
        try:
            results = opdef.infer([v.shape for v in inputs], [v.dtype for v in inputs], attrs)
        except CompileError as err:
            raise CompileError(f"while tracing {node}: {err}\n  traced from {source}") from None
        node.outputs = [Value(node.name if len(results) == 1 else f"{node.name}.{i}",
                              shape, dtype, producer=node)
                        for i, (shape, dtype) in enumerate(results)]
        for value in inputs:
            value.users.append(node)
        self.graph.nodes.append(node)
        outs = [SymbolicTensor(self, v) for v in node.outputs]
        return outs[0] if len(outs) == 1 else tuple(outs)


def _leaves(result: tuple | list) -> list[Any]:
    """The items of a nested tuple result in order: ``(y, (h, c))`` gives ``[y, h, c]``, as
    nn.LSTM returns and torch.onnx exports it."""
    out: list[Any] = []
    for item in result:
        out.extend(_leaves(item) if isinstance(item, (tuple, list)) else [item])
    return out


def _named_inputs(example_inputs: Mapping[str, np.ndarray] | tuple | list | np.ndarray
                  ) -> dict[str, np.ndarray]:
    if isinstance(example_inputs, np.ndarray):
        example_inputs = (example_inputs,)
    if isinstance(example_inputs, Mapping):
        named = dict(example_inputs)
    elif isinstance(example_inputs, (tuple, list)):
        named = {f"input{i}": a for i, a in enumerate(example_inputs)}
    else:
        raise TypeError("example_inputs must be a dict {name: ndarray} or a tuple of ndarrays, "
                        f"got {type(example_inputs).__name__}")
    for name, array in named.items():
        if not isinstance(array, np.ndarray):
            raise TypeError(f"example input {name!r}: expected an ndarray, "
                            f"got {type(array).__name__}")
    return named


def _symbolic_shape(name: str, array: np.ndarray, spec: Mapping[int, tuple[str, int, int]],
                    dims: dict[str, tuple[int, int]]) -> Shape:
    shape: list[int | str] = list(array.shape)
    for axis, entry in spec.items():
        if not isinstance(entry, tuple) or len(entry) != 3:
            raise TypeError(f"dynamic[{name!r}][{axis}] must be (name, min, max), got {entry!r}")
        dim, low, high = entry
        if not -array.ndim <= axis < array.ndim:
            raise ValueError(f"dynamic[{name!r}] names axis {axis}, but the example input has "
                             f"rank {array.ndim}")
        if not (isinstance(low, int) and isinstance(high, int) and 1 <= low <= high):
            raise ValueError(f"dynamic dim {dim!r}: need integers 1 <= min <= max, "
                             f"got ({low}, {high})")
        if dims.setdefault(dim, (low, high)) != (low, high):
            raise ValueError(f"dynamic dim {dim!r} is given two ranges: {dims[dim]} and "
                             f"{(low, high)}")
        shape[axis] = dim
    return tuple(shape)


def _takes_keywords(model: nn.Module, args: Mapping[str, Any]) -> bool:
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False
    return all(name in params for name in args)


def trace(model: nn.Module, example_inputs: Any, dynamic: DynamicSpec | None = None) -> Graph:
    """Record ``model``'s forward pass as a graph.

    Args:
        model: an ``nn.Module``; it is traced in its current mode (call ``eval()`` first).
        example_inputs: ``{name: ndarray}`` (passed as keyword arguments when ``forward`` has
            parameters of those names, else positionally in order; the names become the
            model's input names) or a tuple of arrays (positional, named ``input0``, ...).
            They fix shapes and dtypes.
        dynamic: ``{input: {axis: (dim_name, min, max)}}`` makes those axes symbolic.

    Raises:
        TraceError: data-dependent control flow, or an untraceable argument or result.
        UnsupportedOpError: the model calls a primitive with no ``modelc/ops`` definition.
    """
    named = _named_inputs(example_inputs)
    dynamic = dynamic or {}
    unknown = sorted(set(dynamic) - set(named))
    if unknown:
        raise ValueError(f"dynamic names inputs {unknown} that are not among {sorted(named)}")
    graph = Graph()
    tracer = Tracer(graph, guard_dims=True)
    args = {name: tracer.input(name, _symbolic_shape(name, a, dynamic.get(name, {}), graph.dims),
                               str(a.dtype))
            for name, a in named.items()}
    try:
        if isinstance(example_inputs, Mapping) and _takes_keywords(model, args):
            result = model(**args)
        else:
            result = model(*args.values())
    finally:
        # Dims recorded in node attrs outlive the forward; the passes compare them as names.
        tracer.guard_dims = False
    if isinstance(result, SymbolicTensor):
        result = {"output0": result}
    elif isinstance(result, (tuple, list)):
        result = {f"output{i}": r for i, r in enumerate(_leaves(result))}
    if not isinstance(result, Mapping) or not all(isinstance(r, SymbolicTensor)
                                                  for r in result.values()):
        raise TraceError("forward must return a traced tensor, a (nested) tuple of them or a "
                         f"dict of them; got {type(result).__name__}")
    graph.outputs = {name: r.value for name, r in result.items()}
    graph.verify()
    return graph
