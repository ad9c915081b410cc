"""The graph surgery quantization needs: constants, new nodes in place of old ones, and the
boundary between int8 and float32 tensors.

Every quantized op is followed at once by a ``dequantize_linear`` of its output, which takes
the place of the float tensor it replaces; a later quantized op that reads that tensor reads
the int8 tensor before the dequantize instead (the pair folds away), and dead dequantizes are
removed by ``eliminate_dead_code``. Ops without an integer kernel so keep reading float32,
between a ``dequantize_linear`` and the ``quantize_linear`` of the next quantized op.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Graph, Node, Shape, Value
from .params import QParams

QUANTIZE, DEQUANTIZE = "quantize_linear", "dequantize_linear"


class Rewriter:
    """Rewrites ``graph`` in place; ``params`` gives each float tensor's activation
    parameters (by ``id``), for tensors that are quantized."""

    def __init__(self, graph: Graph, params: dict[int, QParams]) -> None:
        self.graph = graph
        self.params = params
        self.count = 0
        self.quantized_of: dict[int, tuple[Value, QParams]] = {}
        """Per dequantized float tensor (by ``id``): the int8 tensor and its parameters."""

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"{stem}_q{self.count}"

    def constant(self, stem: str, array: np.ndarray) -> Value:
        array = np.asarray(array)
        return Value(self.fresh(stem), tuple(array.shape), array.dtype.name, data=array)

    def pair(self, stem: str, p: QParams) -> tuple[Value, Value]:
        """Constant 0-d scale (float32) and zero point (int8) values of ``p``."""
        return (self.constant(f"{stem}_scale", np.array(p.scale, np.float32)),
                self.constant(f"{stem}_zero_point", np.array(p.zero_point, np.int8)))

    def add_node(self, before: Node, op: str,
                 inputs: dict[str, Value] | list[tuple[str, Value]], attrs: dict[str, Any],
                 shape: Shape, dtype: str) -> Value:
        """Insert ``op(**inputs, **attrs)`` just before ``before`` (``inputs`` as pairs when
        a name repeats, as a list parameter's does); returns its output."""
        pairs = list(inputs.items()) if isinstance(inputs, dict) else inputs
        name = self.fresh(op)
        output = Value(name, tuple(shape), dtype)
        return self.graph.insert(self.graph.nodes.index(before), name, op,
                                 [v for _, v in pairs], tuple(n for n, _ in pairs), attrs,
                                 dict(before.meta), output)

    def quantized(self, value: Value, before: Node) -> tuple[Value, QParams]:
        """The int8 form of float tensor ``value`` for ``before`` to read: the int8 tensor
        it was dequantized from, else a new ``quantize_linear`` with its parameters."""
        if id(value) in self.quantized_of:
            return self.quantized_of[id(value)]
        p = self.params[id(value)]
        scale, zero_point = self.pair(value.name, p)
        q = self.add_node(before, QUANTIZE, {"input": value, "scale": scale,
                                             "zero_point": zero_point}, {}, value.shape, "int8")
        self.quantized_of[id(value)] = (q, p)
        return q, p

    def replace(self, nodes: list[Node], q: Value, p: QParams) -> None:
        """Put int8 ``q`` (parameters ``p``) in place of the float output of the last of
        ``nodes``, which are removed, through a new ``dequantize_linear``."""
        last = nodes[-1]
        scale, zero_point = self.pair(q.name, p)
        real = self.add_node(last, DEQUANTIZE, {"input": q, "scale": scale,
                                                "zero_point": zero_point}, {},
                             last.output.shape, "float32")
        self.graph.replace_uses(last.output, real)
        self.quantized_of[id(real)] = (q, p)
        for node in reversed(nodes):
            self.graph.remove(node)

    def replace_float(self, nodes: list[Node], real: Value) -> None:
        """Put float32 ``real`` in place of the output of the last of ``nodes``, which are
        removed."""
        self.graph.replace_uses(nodes[-1].output, real)
        for node in reversed(nodes):
            self.graph.remove(node)

    def read_as_float(self, value: Value, integer_ops: tuple[str, ...]) -> bool:
        """Whether no user of ``value`` has an integer form (``integer_ops``), so the op
        making it should leave float32 at once rather than requantize (one rounding less),
        as a graph output does."""
        return (any(v is value for v in self.graph.outputs.values())
                or all(user.op not in integer_ops for user in value.users))

    def sole_user(self, value: Value, ops: tuple[str, ...]) -> Node | None:
        """The only user of ``value`` if its op is among ``ops`` and ``value`` is no graph
        output (so the two can fuse)."""
        if (len(value.users) == 1 and value.users[0].op in ops and not value.users[0].attrs
                and all(v is not value for v in self.graph.outputs.values())):
            return value.users[0]
        return None
