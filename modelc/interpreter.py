"""A numpy interpreter for the graph: the compiler's second oracle, after eager ``nn``.

Each node runs the numpy reference body of its ``nn.functional`` primitive; fused
epilogues run after it. Values are freed after their last use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from nn import functional as F

from .errors import CompileError
from .graph import Graph, Node, Value
from .trace import LIST_MARK, SymbolicDim


def _reference(op: str) -> Any:
    """The numpy semantics of ``op``: a primitive's body, or a composite run eagerly."""
    fn = getattr(F, op, None)
    if fn is None:
        raise CompileError(f"op {op!r} is not in nn.functional")
    return getattr(fn, "__nn_primitive__", fn)


def bind_dims(graph: Graph, inputs: Mapping[str, np.ndarray]) -> dict[str, int]:
    """The value of every symbolic dim, read off the input shapes."""
    dims: dict[str, int] = {}
    for name, value in graph.inputs.items():
        for dim, size in zip(value.shape, np.shape(inputs[name])):
            if isinstance(dim, str):
                dims.setdefault(dim, int(size))
    return dims


def _resolve(value: Any, dims: dict[str, int]) -> Any:
    """Attr values with symbolic dim names (alone, or inside tuples and lists) replaced by
    sizes."""
    if isinstance(value, SymbolicDim):
        return dims[value]
    if isinstance(value, (tuple, list)):
        return type(value)(dims.get(v, v) if isinstance(v, str) else _resolve(v, dims)
                           for v in value)
    return value


def run_node(node: Node, values: list[np.ndarray], dims: dict[str, int] | None = None) -> Any:
    """Evaluate one node on concrete input ``values`` (in ``node.inputs`` order); ``dims``
    gives the sizes of symbolic dims named in its attrs."""
    args: dict[str, Any] = {}
    for name, value in zip(node.input_names, values):
        if name.endswith(LIST_MARK):
            args.setdefault(name[:-len(LIST_MARK)], []).append(value)
        else:
            args[name] = value
    residual = args.pop("residual", None)
    attrs = {k: _resolve(v, dims or {}) for k, v in node.attrs.items() if k != "epilogue"}
    out = _reference(node.op)(**args, **attrs)
    for op in node.attrs.get("epilogue", ()):
        out = F.add(out, residual) if op == "add" else _reference(op)(out)
    return out


def interpret(graph: Graph, inputs: Mapping[str, np.ndarray], *,
              observe: Callable[[Value, np.ndarray], None] | None = None
              ) -> dict[str, np.ndarray]:
    """Run ``graph`` on ``inputs`` with numpy and return its outputs by name; ``observe``, if
    given, sees every graph input and node output as it is computed (calibration).

    Raises:
        CompileError: a node failed, naming it and the user's source line ("while executing").
    """
    missing = sorted(set(graph.inputs) - set(inputs))
    if missing:
        raise ValueError(f"missing inputs {missing}; the graph takes {sorted(graph.inputs)}")
    env = {id(v): np.asarray(inputs[name]) for name, v in graph.inputs.items()}
    if observe is not None:
        for value in graph.inputs.values():
            observe(value, env[id(value)])
    dims = bind_dims(graph, inputs)
    last_use = {id(v): i for i, n in enumerate(graph.nodes) for v in n.inputs}
    keep = {id(v) for v in graph.outputs.values()}
    for index, node in enumerate(graph.nodes):
        values = [value.data if value.data is not None else env[id(value)]
                  for value in node.inputs]
        try:
            results = run_node(node, values, dims)
            for value, result in zip(node.outputs, results if len(node.outputs) > 1
                                     else (results,)):
                env[id(value)] = np.asarray(result)
                if observe is not None:
                    observe(value, env[id(value)])
        except Exception as err:
            raise CompileError(f"while executing {node.describe()}: "
                               f"{type(err).__name__}: {err}") from err
        for value in node.inputs:
            if last_use.get(id(value)) == index and id(value) not in keep:
                env.pop(id(value), None)
    return {name: env[id(v)] if v.data is None else v.data for name, v in graph.outputs.items()}
