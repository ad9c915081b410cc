"""expand_powers: ``pow`` by a constant scalar exponent, and ``rsqrt``, become ops that have
kernels, following numpy's ``power`` on float32:

- an integer exponent: multiplications by repeated squaring (exact signs for x < 0), and
  ``1 / ...`` when it is negative;
- a half-integer one: the same times ``sqrt(x)`` (NaN for x < 0, as numpy gives);
- any other: ``exp(c * log(x))`` (NaN for x < 0, 0 or inf at x = 0, as numpy gives);
- ``rsqrt(x)``: ``1 / sqrt(x)``.

An exponent computed at run time, or 0, stays a ``pow`` node, which has no lowering.
"""

from __future__ import annotations

import math
import numbers

from ..graph import Graph, Node, Value

LARGEST_INTEGER = 2 ** 31
"""Integer (and half-integer) exponents up to this magnitude become at most ~62
multiplications; larger ones go through exp and log."""


class _Emitter:
    """Inserts the nodes replacing ``node``, in order, just before it."""

    def __init__(self, graph: Graph, node: Node):
        self.graph, self.node, self.count = graph, node, 0
        self.shape = node.output.shape

    def __call__(self, op: str, inputs: list[Value], names: tuple[str, ...],
                 attrs: dict | None = None, output: Value | None = None) -> Value:
        self.count += 1
        name = f"{self.node.name}_{op}{self.count}"
        if output is None:
            output = Value(name, self.shape, inputs[0].dtype)
        position = self.graph.nodes.index(self.node)
        return self.graph.insert(position, name, op, inputs, names, attrs or {},
                                 self.node.meta, output)

    def mul(self, a: Value, b: Value) -> Value:
        return self("mul", [a, b], ("input", "other"))

    def finish(self, value: Value, output: Value) -> None:
        """Make ``output`` hold ``value``: the last inserted node writes it instead, or, when
        ``value`` is the input itself, a multiplication by 1 does."""
        producer = value.producer
        if producer is None or producer is self.node or value.users:
            self("mul", [value], ("input",), {"other": 1.0}, output)
            return
        producer.outputs = [output]
        output.producer = producer


def _integer_power(emit: _Emitter, x: Value, exponent: int) -> Value:
    """``x ** exponent`` for ``exponent >= 1`` by repeated squaring."""
    result: Value | None = None
    square = x
    while True:
        if exponent & 1:
            result = square if result is None else emit.mul(result, square)
        exponent >>= 1
        if not exponent:
            assert result is not None
            return result
        square = emit.mul(square, square)


def _expand_pow(emit: _Emitter, x: Value, c: float, output: Value) -> None:
    """Insert nodes computing ``x ** c`` into ``output``."""
    magnitude = abs(c)
    whole = math.floor(magnitude)
    half = magnitude - whole == 0.5
    if (magnitude == whole or half) and whole <= LARGEST_INTEGER:
        factors = ([emit("sqrt", [x], ("input",))] if half else []) + (
            [_integer_power(emit, x, whole)] if whole else [])
        value = factors[0] if len(factors) == 1 else emit.mul(*factors)
        if c < 0:
            emit("div", [value], ("other",), {"input": 1.0}, output)
        else:
            emit.finish(value, output)
        return
    scaled = emit("mul", [emit("log", [x], ("input",))], ("input",), {"other": float(c)})
    emit("exp", [scaled], ("input",), output=output)


def expand_powers(graph: Graph) -> Graph:
    for node in list(graph.nodes):
        exponent = node.attrs.get("exponent") if node.op == "pow" else None
        constant = isinstance(exponent, numbers.Real) and exponent != 0
        if node.op not in ("pow", "rsqrt") or node.inputs[0].dtype != "float32" or (
                node.op == "pow" and not constant):
            continue
        emit, x, result = _Emitter(graph, node), node.inputs[0], node.output
        node.outputs = []
        if node.op == "rsqrt":
            emit("div", [emit("sqrt", [x], ("input",))], ("other",), {"input": 1.0}, result)
        else:
            assert isinstance(exponent, numbers.Real)  # checked above
            _expand_pow(emit, x, float(exponent), result)
        graph.remove(node)
    return graph
