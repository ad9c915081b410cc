"""The graph IR: values (edges) produced by nodes (ops named after ``nn.functional``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Dim = int | str
Shape = tuple[Dim, ...]
Guard = tuple[tuple["Value", bool], ...]
"""``node.meta["guard"]``: the node runs only where each bool value (one element) is the
given truth value: a branch of a run-time ``If``, whose results a ``where`` on the same
condition merges, so running a node regardless of its guard never changes the outputs."""


@dataclass(eq=False)
class Value:
    """A tensor in the graph: a graph input (no producer, no data), a constant (``data``),
    or the output of ``producer``. ``shape`` entries are ints or symbolic dim names."""

    name: str
    shape: Shape
    dtype: str
    producer: Node | None = None
    data: np.ndarray | None = None
    users: list[Node] = field(default_factory=list)

    @property
    def is_constant(self) -> bool:
        return self.data is not None

    def __repr__(self) -> str:
        return f"%{self.name}"


@dataclass(eq=False)
class Node:
    """``outputs = op(inputs, **attrs)``. ``input_names`` are the ``nn.functional`` parameter
    names the inputs were passed as; ``meta`` holds e.g. the user's source line."""

    name: str
    op: str
    inputs: list[Value]
    input_names: tuple[str, ...]
    attrs: dict[str, Any]
    outputs: list[Value] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def output(self) -> Value:
        return self.outputs[0]

    def named_inputs(self) -> dict[str, Value]:
        """The inputs keyed by their ``input_names``."""
        return dict(zip(self.input_names, self.inputs))

    def __str__(self) -> str:
        args = ", ".join([repr(v) for v in self.inputs]
                         + [f"{k}={v!r}" for k, v in self.attrs.items()])
        outs = ", ".join(repr(v) for v in self.outputs)
        return f"{outs} = {self.op}({args})"

    def describe(self) -> str:
        """``%relu_3 = relu(%linear_2)`` plus the user's source line when known."""
        where = self.meta.get("source")
        return f"{self}" + (f"\n  traced from {where}" if where else "")


@dataclass
class Graph:
    """Nodes in execution order between named inputs and outputs; ``dims`` maps each
    symbolic dim name to its inclusive ``(min, max)`` range."""

    inputs: dict[str, Value] = field(default_factory=dict)
    outputs: dict[str, Value] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)
    dims: dict[str, tuple[int, int]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def constants(self) -> list[Value]:
        seen: dict[int, Value] = {}
        for node in self.nodes:
            for value in node.inputs:
                if value.is_constant:
                    seen.setdefault(id(value), value)
        return list(seen.values())

    def values(self) -> list[Value]:
        """Every non-constant value: inputs, then node outputs in order."""
        return list(self.inputs.values()) + [v for n in self.nodes for v in n.outputs]

    def ops(self) -> list[str]:
        return sorted({n.op for n in self.nodes})

    def max_numel(self, value: Value) -> int:
        return math.prod(d if isinstance(d, int) else self.dims[d][1] for d in value.shape)

    def replace_uses(self, old: Value, new: Value) -> None:
        """Make every user of ``old`` (and the graph outputs) use ``new`` instead."""
        for user in old.users:
            user.inputs = [new if v is old else v for v in user.inputs]
            if user not in new.users:
                new.users.append(user)
        old.users = []
        self.outputs = {k: new if v is old else v for k, v in self.outputs.items()}

    def insert(self, position: int, name: str, op: str, inputs: list[Value],
               input_names: tuple[str, ...], attrs: dict[str, Any], meta: dict[str, Any],
               output: Value) -> Value:
        """Insert ``output = op(inputs, **attrs)`` as node ``name`` at ``position`` (a pass
        rewriting the graph); ``output`` becomes the new node's. Returns ``output``."""
        node = Node(name, op, list(inputs), input_names, attrs, meta=meta)
        node.outputs = [output]
        output.producer = node
        for value in inputs:
            if node not in value.users:
                value.users.append(node)
        self.nodes.insert(position, node)
        return output

    def remove(self, node: Node) -> None:
        """Drop ``node``, which must have no remaining users."""
        for value in node.inputs:
            if node in value.users:
                value.users.remove(node)
        self.nodes.remove(node)

    def verify(self) -> None:
        """Check the invariants every pass must keep; raise once listing every violation.

        Raises:
            AssertionError: with one line per violation (these are compiler bugs).
        """
        problems = []
        defined = {id(v) for v in self.inputs.values()}
        for node in self.nodes:
            for value in node.inputs:
                if not value.is_constant and id(value) not in defined:
                    problems.append(f"{node}: input {value!r} is used before it is defined")
                if node not in value.users:
                    problems.append(f"{node}: not listed among the users of {value!r}")
            for value in node.outputs:
                if value.producer is not node:
                    problems.append(f"{node}: output {value!r} names another producer")
                defined.add(id(value))
            for value in node.inputs + node.outputs:
                for d in value.shape:
                    if isinstance(d, str) and d not in self.dims:
                        problems.append(f"{node}: {value!r} uses unknown dim {d!r}")
        for name, value in self.outputs.items():
            if id(value) not in defined and not value.is_constant:
                problems.append(f"output {name!r} ({value!r}) is never defined")
        if problems:
            raise AssertionError("graph verification failed:\n  " + "\n  ".join(problems))

    def __str__(self) -> str:
        def sig(v: Value) -> str:
            return f"{v!r}: {v.dtype}[{', '.join(str(d) for d in v.shape)}]"

        lines = [f"graph({', '.join(sig(v) for v in self.inputs.values())}):"]
        lines += [f"  {node}" for node in self.nodes]
        lines.append("  return " + ", ".join(f"{n}={v!r}" for n, v in self.outputs.items()))
        return "\n".join(lines)
