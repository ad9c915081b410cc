"""A numpy interpreter for the graph: the compiler's second oracle, after eager ``nn``.

Each node runs the numpy reference body of its ``nn.functional`` primitive; fused
epilogues run after it. Values are freed after their last use.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from nn import functional as F

from .errors import CompileError
from .graph import Graph, Node


def _reference(op: str) -> Any:
    fn = getattr(F, op, None)
    if fn is None or not hasattr(fn, "__nn_primitive__"):
        raise CompileError(f"op {op!r} has no primitive in nn.functional")
    return fn.__nn_primitive__


def run_node(node: Node, args: dict[str, np.ndarray]) -> np.ndarray:
    """Evaluate one node on concrete ``args`` (keyed by ``node.input_names``)."""
    attrs = {k: v for k, v in node.attrs.items() if k != "epilogue"}
    out = _reference(node.op)(**args, **attrs)
    for op in node.attrs.get("epilogue", ()):
        out = _reference(op)(out)
    return out


def interpret(graph: Graph, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run ``graph`` on ``inputs`` with numpy and return its outputs by name.

    Raises:
        CompileError: a node failed, naming it and the user's source line ("while executing").
    """
    missing = sorted(set(graph.inputs) - set(inputs))
    if missing:
        raise ValueError(f"missing inputs {missing}; the graph takes {sorted(graph.inputs)}")
    env = {id(v): np.asarray(inputs[name]) for name, v in graph.inputs.items()}
    last_use = {id(v): i for i, n in enumerate(graph.nodes) for v in n.inputs}
    keep = {id(v) for v in graph.outputs.values()}
    for index, node in enumerate(graph.nodes):
        args = {name: value.data if value.is_constant else env[id(value)]
                for name, value in zip(node.input_names, node.inputs)}
        try:
            env[id(node.output)] = run_node(node, args)
        except Exception as err:
            raise CompileError(f"while executing {node.describe()}: "
                               f"{type(err).__name__}: {err}") from err
        for value in node.inputs:
            if last_use.get(id(value)) == index and id(value) not in keep:
                env.pop(id(value), None)
    return {name: env[id(v)] for name, v in graph.outputs.items()}
